/* `serve`: the operator console's HTTP server (console/), from the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/cli.h"
#include "cbatch/job.h"
#include "cli_internal.h"
#include "serve.h"

int cb__cli_cmd_serve(struct cli *c)
{
	static const char *const flags[] = { "--listen=",
					     "--admin-token-file=",
					     "--pool=",
					     "--allowed-host=",
					     "--client-connections=",
					     "--launch-wait=",
					     "--snapshot-interval=",
					     NULL };
	const char *values[7] = { NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	cb__serve_options o = { 0 };
	const char **pos, **names = NULL, **hosts;
	size_t npos, n, nhosts = 0;
	long long pool = CB__SERVE_DEFAULT_POOL, per_client = CB__SERVE_DEFAULT_PER_CLIENT;
	long long launch_wait = CB__SERVE_DEFAULT_LAUNCH_WAIT;
	long long snapshot = CB__SERVE_DEFAULT_SNAPSHOT_INTERVAL;
	int family, port, rc;
	char addr[64];

	pos = calloc((size_t)c->argc, sizeof(*pos));
	hosts = calloc((size_t)c->argc, sizeof(*hosts));
	if (!pos || !hosts) {
		free(pos);
		free(hosts);
		return cb__cli_out_of_memory(c);
	}
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, values)) != 0)
		goto done;
	/* --allowed-host repeats (the split keeps only the last): every one. */
	for (int i = 1; i < c->argc && strcmp(c->argv[i], "--") != 0; i++) {
		if (strcmp(c->argv[i], "--allowed-host") == 0 && i + 1 < c->argc)
			hosts[nhosts++] = c->argv[++i];
		else if (strncmp(c->argv[i], "--allowed-host=", 15) == 0)
			hosts[nhosts++] = c->argv[i] + 15;
		else if (strcmp(c->argv[i], "--listen") == 0 ||
			 strcmp(c->argv[i], "--admin-token-file") == 0 ||
			 strcmp(c->argv[i], "--pool") == 0 ||
			 strcmp(c->argv[i], "--client-connections") == 0 ||
			 strcmp(c->argv[i], "--launch-wait") == 0 ||
			 strcmp(c->argv[i], "--snapshot-interval") == 0)
			i++; /* its value, whatever it says */
	}
	if (npos) {
		rc = cb__cli_usage_error(c, "serve: unexpected argument '%.100s'", pos[0]);
		goto done;
	}
	if (cb__serve_parse_listen(&family, addr, sizeof(addr), &port,
				   values[0] ? values[0] : CB__SERVE_DEFAULT_LISTEN, &c->err) < 0) {
		rc = cb__cli_fail(c, CB_EXIT_USAGE);
		goto done;
	}
	if (values[2] &&
	    (cb__cli_parse_positive(&pool, values[2]) < 0 || pool > CB__SERVE_MAX_POOL)) {
		rc = cb__cli_usage_error(c, "serve: invalid --pool '%.100s' (expected 1..%d)",
					 values[2], CB__SERVE_MAX_POOL);
		goto done;
	}
	if (values[4] && (cb__cli_parse_positive(&per_client, values[4]) < 0 ||
			  per_client > CB__SERVE_MAX_PER_CLIENT)) {
		rc = cb__cli_usage_error(c,
					 "serve: invalid --client-connections '%.100s' (expected "
					 "1..%d)",
					 values[4], CB__SERVE_MAX_PER_CLIENT);
		goto done;
	}
	if (values[5] && (cb__cli_parse_positive(&launch_wait, values[5]) < 0 ||
			  launch_wait > CB__SERVE_MAX_LAUNCH_WAIT)) {
		rc = cb__cli_usage_error(c,
					 "serve: invalid --launch-wait '%.100s' (expected 1..%d "
					 "seconds)",
					 values[5], CB__SERVE_MAX_LAUNCH_WAIT);
		goto done;
	}
	if (values[6] && strcmp(values[6], "0") == 0) {
		snapshot = 0;
	} else if (values[6] && (cb__cli_parse_positive(&snapshot, values[6]) < 0 ||
				 snapshot > CB__SERVE_MAX_SNAPSHOT_INTERVAL)) {
		rc = cb__cli_usage_error(c,
					 "serve: invalid --snapshot-interval '%.100s' (expected "
					 "0..%d seconds)",
					 values[6], CB__SERVE_MAX_SNAPSHOT_INTERVAL);
		goto done;
	}
	/* Before listening: a launch's child would refuse what serve accepted. */
	if ((rc = cb__cli_check_env(c)) != 0)
		goto done;
	n = cb_registry_count(c->reg);
	if (n && !(names = calloc(n, sizeof(*names)))) {
		rc = cb__cli_out_of_memory(c);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = cb_job_name(cb_registry_at(c->reg, i));
	o.listen = values[0];
	o.token_file = values[1];
	o.pool = (int)pool;
	o.per_client = (int)per_client;
	o.launch_wait = (int)launch_wait;
	o.snapshot_interval = (double)snapshot;
	o.conninfo = c->db;
	o.job_names = names;
	o.njobs = n;
	o.reg = c->reg;
	o.log = stdout;
	o.allowed_hosts = hosts;
	o.nallowed_hosts = nhosts;
	rc = cb__serve_run(&o, &c->err);
	if (rc < 0)
		rc = cb__cli_fail(c, rc == CB_EINVAL ? CB_EXIT_USAGE : CB_EXIT_FAILED);
done:
	free(names);
	free(hosts);
	free(pos);
	return rc;
}
