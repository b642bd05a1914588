/* `worker`: run partitions of running executions, on any host that reaches
 * the repository (partition.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/cli.h"
#include "cbatch/partition.h"
#include "cli_internal.h"
#include "log.h"

static int parse_seconds(struct cli *c, const char *flag, const char *v, double min, double *out)
{
	char *end;

	*out = strtod(v, &end);
	if (end == v || *end || !(*out >= min && *out <= 86400.0))
		return cb__cli_usage_error(c,
					   "worker: %s '%.40s' must be a number of seconds "
					   "from %g to 86400",
					   flag, v, min);
	return 0;
}

/* The value of option @p flag at argv[*i] ("--flag V" or "--flag=V"), or NULL. */
static const char *option(struct cli *c, int *i, const char *flag, int *bad)
{
	const char *a = c->argv[*i];
	size_t n = strlen(flag);

	if (strncmp(a, flag, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= c->argc) {
		*bad = cb__cli_usage_error(c, "worker: %s needs a value", flag);
		return NULL;
	}
	return c->argv[++*i];
}

int cb__cli_cmd_worker(struct cli *c)
{
	cb_worker_options o = CB_WORKER_OPTIONS_INIT;
	cb_worker_result res;
	const char **jobs;
	size_t njobs = 0;
	PGconn *conn = NULL;
	int rc = 0;

	jobs = calloc((size_t)c->argc + 1, sizeof(*jobs));
	if (!jobs)
		return cb__cli_out_of_memory(c);
	o.verbose = 1;
	o.handle_signals = 1;
	for (int i = 1; i < c->argc && rc == 0; i++) {
		const char *v;
		long long n;

		if ((v = option(c, &i, "--job", &rc)) != NULL) {
			if (!cb_registry_find(c->reg, v))
				rc = cb__cli_unknown_job(c, v);
			jobs[njobs++] = v;
		} else if ((v = option(c, &i, "--threads", &rc)) != NULL) {
			if (cb__cli_parse_positive(&n, v) < 0 || n > 256)
				rc = cb__cli_usage_error(
					c, "worker: --threads '%.40s' must be 1..256", v);
			o.threads = (unsigned int)n;
		} else if ((v = option(c, &i, "--exit-when-idle", &rc)) != NULL) {
			rc = parse_seconds(c, "--exit-when-idle", v, 0.1,
					   &o.exit_when_idle_seconds);
		} else if ((v = option(c, &i, "--lease", &rc)) != NULL) {
			rc = parse_seconds(c, "--lease", v, 0.1, &o.lease_seconds);
		} else if (rc == 0 && strcmp(c->argv[i], "--quiet") == 0) {
			o.verbose = 0;
		} else if (rc == 0) {
			rc = cb__cli_usage_error(
				c, "worker: unknown argument '%.60s' (see '%s worker --help')",
				c->argv[i], c->prog);
		}
	}
	if (rc == 0 && njobs == 0 && cb_registry_count(c->reg) == 0)
		rc = cb__cli_usage_error(c, "worker: this program registers no jobs");
	if (rc == 0)
		rc = cb__cli_open_db(c, &conn, 1);
	if (rc != 0)
		goto done;
	o.job_names = njobs ? jobs : NULL;
	o.njobs = njobs;
	if (cb_worker_run(&res, c->reg, conn, &o, &c->err) < 0) {
		rc = cb__cli_fail(c, CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:I,s:I,s:I,s:I,s:I}", "claimed", (json_int_t)res.claimed,
					"completed", (json_int_t)res.completed, "failed",
					(json_int_t)res.failed, "stopped", (json_int_t)res.stopped,
					"handed_back", (json_int_t)res.handed_back);

		if (!doc) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (cb__log_get_format() == CB__LOG_JSON) {
		cb__log_to(stdout, "worker", CB__LOG_INFO, CB__EV_NODE_STOPPED, NULL,
			   "claimed %lld partitions, completed %lld, failed or lost %lld, stopped "
			   "%lld, handed back %lld",
			   res.claimed, res.completed, res.failed, res.stopped, res.handed_back);
	} else {
		/* Every claim ends in exactly one of these: they add up. */
		printf("worker: claimed %lld partitions, completed %lld, failed or lost %lld, "
		       "stopped %lld, handed back %lld\n",
		       res.claimed, res.completed, res.failed, res.stopped, res.handed_back);
	}
done:
	PQfinish(conn);
	free(jobs);
	return rc;
}
