/* Opening a second connection like an existing one (heartbeat, cursor reader). */
#include "cbatch/sys/conn.h"
#include "pgkit.h"

#include <stdio.h>
#include <string.h>

PGconn *cb_pg_connect_like(PGconn *like, const char *application_name)
{
	PQconninfoOption *opts = PQconninfo(like), *o;
	const char *keys[64], *vals[64];
	char key[4096];
	size_t len;
	int n = 0;
	PGconn *c;

	len = (size_t)snprintf(key, sizeof(key), "like\x1f%s", application_name);
	for (o = opts; o && o->keyword && n < 62; o++) {
		if (!o->val || !*o->val || strcmp(o->keyword, "application_name") == 0)
			continue;
		keys[n] = o->keyword;
		vals[n] = o->val;
		n++;
		if (len < sizeof(key))
			len += (size_t)snprintf(key + len, sizeof(key) - len, "\x1f%s=%s",
						o->keyword, o->val);
	}
	/* A key cut short is no key: such a connection is never kept. */
	if (len < sizeof(key) && (c = cb__pg_keep_take(key)) != NULL) {
		PQconninfoFree(opts);
		return c;
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
	if (c && PQstatus(c) == CONNECTION_OK && len < sizeof(key))
		cb__pg_keep_mark(c, key);
	return c;
}
