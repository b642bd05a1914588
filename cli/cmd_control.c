/* Acting on executions and locks from outside: `stop`, `abandon`, `unlock`. */
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

/* ---- stop and abandon ---------------------------------------------------- */

static int transition(struct cli *c, int stop)
{
	PGconn *conn = NULL;
	cb_status now = CB_STATUS_UNKNOWN;
	long long id;
	int rc;

	if ((rc = cb__cli_one_id(c, &id)) != 0)
		return rc;
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	rc = stop ? cb_repo_stop(&now, conn, id, &c->err) : cb_repo_abandon(conn, id, &c->err);
	if (rc < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(rc, 1));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:I,s:s}", "job_execution_id", (json_int_t)id, "status",
					stop ? cb_status_name(now) : "ABANDONED");

		if (!doc) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (stop && now == CB_STATUS_STOPPED) {
		printf("execution %lld: its owner was lost; STOPPED now (restartable)\n", id);
	} else if (stop) {
		printf("execution %lld: stop requested; it ends as STOPPED after its current chunk "
		       "commits\n",
		       id);
	} else {
		printf("execution %lld: ABANDONED; its instance can no longer be restarted\n", id);
	}
done:
	PQfinish(conn);
	return rc;
}

int cb__cli_cmd_stop(struct cli *c)
{
	return transition(c, 1);
}

int cb__cli_cmd_abandon(struct cli *c)
{
	return transition(c, 0);
}

/* ---- unlock -------------------------------------------------------------- */

int cb__cli_cmd_unlock(struct cli *c)
{
	static const char *const flags[] = { "--force", "--reason=", NULL };
	const char *values[2] = { NULL, NULL };
	const char **pos;
	char who[300], host[128] = "unknown";
	const char *user = getenv("USER");
	PGconn *conn = NULL;
	size_t npos;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	rc = cb__cli_split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos != 1)
		rc = cb__cli_usage_error(
			c,
			"unlock: name one lock (usage: %s unlock LOCK_NAME --force "
			"[--reason TEXT])",
			c->prog);
	if (rc == 0 && !values[0])
		rc = cb__cli_usage_error(c,
					 "unlock: releasing a lock someone may hold needs --force");
	if (rc == 0)
		rc = cb__cli_text_arg(c, "lock name", pos[0]);
	if (rc == 0)
		rc = cb__cli_text_arg(c, "reason", values[1]);
	if (rc == 0)
		rc = cb__cli_open_db(c, &conn, 1);
	if (rc != 0)
		goto done;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(who, sizeof(who), "%s@%s", user && *user ? user : "unknown", host);
	{
		char raw[sizeof(who)];

		memcpy(raw, who, sizeof(raw));
		cb__utf8_sanitize(who, sizeof(who), raw);
	}
	if ((rc = cb_lock_force_unlock(conn, pos[0], who, values[1], &c->err)) < 0) {
		rc = cb__cli_fail(c, rc == CB_ENOTFOUND ? CB_EXIT_USAGE : CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc =
			json_pack("{s:s,s:s}", "lock_name", pos[0], "outcome", "FORCE_UNLOCKED");

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else {
		char shown[2048], by[1200];

		printf("lock '%s' released by force (recorded as FORCE_UNLOCKED by %s)\n",
		       cb__cli_term(shown, sizeof(shown), pos[0]),
		       cb__cli_term(by, sizeof(by), who));
	}
	rc = 0;
done:
	PQfinish(conn);
	free(pos);
	return rc;
}
