/* `schema init|check`: create, upgrade or verify the repository schema. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "cbatch/params.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cli_internal.h"
#include "text.h"

/* ---- schema -------------------------------------------------------------- */

int cb__cli_cmd_schema(struct cli *c)
{
	PGconn *conn = NULL;
	int from = 0, to = 0, rc;
	const char *sub;

	if (c->argc < 2)
		return cb__cli_usage_error(c, "schema: missing subcommand (init or check)");
	if (c->argc > 2)
		return cb__cli_usage_error(c, "schema: too many arguments");
	sub = c->argv[1];
	if (strcmp(sub, "init") != 0 && strcmp(sub, "check") != 0)
		return cb__cli_usage_error(c, "schema: unknown subcommand '%.100s' (init or check)",
					   sub);
	if ((rc = cb__cli_open_db(c, &conn, 0)) != 0)
		return rc;
	if (strcmp(sub, "init") == 0) {
		if (cb_repo_schema_init(conn, &from, &to, &c->err) < 0) {
			rc = cb__cli_fail(c, CB_EXIT_FAILED);
			goto done;
		}
	} else {
		if (cb_repo_schema_check(conn, &c->err) < 0) {
			rc = cb__cli_fail(c, CB_EXIT_FAILED);
			goto done;
		}
		from = to = cb_repo_schema_target();
	}
	if (c->json) {
		json_t *doc = json_pack("{s:i,s:i,s:i}", "schema_version", to, "previous_version",
					from, "library_version", cb_repo_schema_target());

		if (!doc) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (strcmp(sub, "init") == 0) {
		printf("schema at version %d (was %d)\n", to, from);
	} else {
		printf("schema at version %d, as this program expects\n", to);
	}
done:
	PQfinish(conn);
	return rc;
}
