/* Opening a second connection like an existing one (heartbeat, cursor reader). */
#include "cbatch/sys/conn.h"
#include "pgkit.h"

#include <string.h>

PGconn *cb_pg_connect_like(PGconn *like, const char *application_name)
{
	PQconninfoOption *opts = PQconninfo(like), *o;
	const char *keys[64], *vals[64];
	int n = 0;
	PGconn *c;

	for (o = opts; o && o->keyword && n < 62; o++) {
		if (!o->val || !*o->val || strcmp(o->keyword, "application_name") == 0)
			continue;
		keys[n] = o->keyword;
		vals[n] = o->val;
		n++;
	}
	/* Operators (and tests) can tell this session from the job's. */
	keys[n] = "application_name";
	vals[n] = application_name;
	n++;
	keys[n] = NULL;
	vals[n] = NULL;
	c = PQconnectdbParams(keys, vals, 0);
	PQconninfoFree(opts);
	if (c)
		PQsetNoticeReceiver(c, cb__pg_notice_receiver, NULL);
	return c;
}
