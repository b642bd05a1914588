/*
 * `serve`: the operator console's HTTP server (internal). The CLI's only view
 * of console/: it parses the command line into these options and runs.
 */
#ifndef CB_CONSOLE_SERVE_H
#define CB_CONSOLE_SERVE_H

#include <stddef.h>
#include <stdio.h>

#include "cbatch/error.h"

#define CB__SERVE_DEFAULT_LISTEN "127.0.0.1:8080"
#define CB__SERVE_DEFAULT_POOL   4
#define CB__SERVE_MAX_POOL       64
/* Connections from one client address: a default for browsers (6 each) and
 * a few tools; the most leaves half the server's 1000 to everyone else. */
#define CB__SERVE_DEFAULT_PER_CLIENT 64
#define CB__SERVE_MAX_PER_CLIENT     500
/* How long a launch or restart from the console waits for its process to
 * record its execution or exit before it answers 202 (still starting). */
#define CB__SERVE_DEFAULT_LAUNCH_WAIT 8
#define CB__SERVE_MAX_LAUNCH_WAIT     120
/* How long /metrics and the jobs overview reuse what they computed: what a
 * Prometheus scrape interval (15 s and up) never notices, and what keeps
 * a hundred scrapers at one query per interval. */
#define CB__SERVE_DEFAULT_SNAPSHOT_INTERVAL 5
#define CB__SERVE_MAX_SNAPSHOT_INTERVAL     300

struct cb_registry;

typedef struct cb__serve_options {
	const char *listen;     /* "ADDR:PORT" (IPv4, [IPv6] or localhost); NULL: default */
	const char *token_file; /* the admin token; NULL: read-only */
	int pool;               /* repository connections, 1..CB__SERVE_MAX_POOL; 0: default */
	int per_client; /* connections per client address, 1..CB__SERVE_MAX_PER_CLIENT; 0: default */
	int launch_wait; /* seconds, 1..CB__SERVE_MAX_LAUNCH_WAIT; 0: default */
	/* Seconds /metrics and /api/v1/jobs reuse a computed snapshot,
	 * 0..CB__SERVE_MAX_SNAPSHOT_INTERVAL (0: computed for each request, one
	 * computation at a time, shared by the requests that wait for it). */
	double snapshot_interval;
	const char *conninfo; /* NULL: $CBATCH_DB, else libpq's PG* variables */
	/* The program's registered jobs (borrowed), listed by /api/v1/jobs even
	 * before they ever ran. */
	const char *const *job_names;
	size_t njobs;
	/* The registry itself (borrowed): a job's declared parameters and the
	 * checks of a launch from the console; NULL: no launches. */
	const struct cb_registry *reg;
	FILE *log; /* the start line and shutdown notes; NULL: stderr */
	/* More names the Host header may give (a reverse proxy's), each NAME or
	 * NAME:PORT (borrowed); a NAME without a port is accepted on any port. */
	const char *const *allowed_hosts;
	size_t nallowed_hosts;
} cb__serve_options;

/*
 * Check the options, start the server and serve until SIGTERM or SIGINT:
 * then stop accepting, let the requests in flight finish, and return 0.
 * @return 0; CB_EINVAL for a bad option value or token file (the message
 * names it); CB_ERROR when the server cannot start (address in use...).
 */
int cb__serve_run(const cb__serve_options *opts, cb_error *err);

/* Parse "ADDR:PORT" (exposed for the CLI's validation and the tests).
 * @p family receives 4 or 6, @p addr the address literal (>= 64 bytes).
 * @return 0 or CB_EINVAL (naming the value). */
int cb__serve_parse_listen(int *family, char *addr, size_t addr_size, int *port, const char *value,
			   cb_error *err);

/* Print the console's routes, one per line ("  GET  /api/v1/jobs", "  POST
 * /api/v1/jobs/{id}/executions"), from the router's own table: serve's help
 * lists what the server answers, never a copy of it. */
void cb__serve_routes_help(FILE *f);

#endif
