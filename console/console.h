/*
 * The operator console's internals: the server's state, one request, the
 * route table, replies, the connection pool and the query-string checks.
 *
 * A request runs on one of the server's threads: the router finds its route
 * (an exact path or a pattern with one {id} segment), checks the method, and
 * calls the route's GET or POST handler, which replies exactly once through
 * the cb__reply_* helpers (every reply carries the security headers; errors
 * are JSON {"error": {"status", "message"}}). Handlers that need the
 * repository borrow a connection from the pool and give it back. A
 * read-only list has no handler of its own: its route row describes it and
 * cb__list_serve (list.c) serves every list.
 */
#ifndef CB_CONSOLE_H
#define CB_CONSOLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <microhttpd.h>

#include "cbatch/error.h"
#include "serve.h"

/* ---- pool.c: a bounded pool of repository connections -------------------- */

typedef struct cb__pool cb__pool;

/* A pool of at most @p size connections to @p conninfo (copied; NULL: the
 * CLI's defaults), opened on first use. A borrower waits at most
 * @p wait_seconds for a free one. With @p writes, a connection whose server
 * says it takes no writes is not kept (see cb__pool_put). @return 0 or
 * CB_ENOMEM. */
int cb__pool_new(cb__pool **out, const char *conninfo, int size, double wait_seconds, int writes,
		 cb_error *err);
/* Borrow a connection, opening it if needed. @return 0; CB_ERETRY when none
 * became free in time; CB_EDB when connecting failed (the message says why). */
int cb__pool_get(cb__pool *p, PGconn **out, cb_error *err);
/* Give it back; a broken connection, one left in a transaction, or (in a
 * pool for writes) one on a server that now takes no writes is closed and
 * its slot reopens on the next borrow. NULL is ignored. */
void cb__pool_put(cb__pool *p, PGconn *conn);
/* Connections open now (for tests and the load check). */
int cb__pool_open_count(cb__pool *p);
void cb__pool_free(cb__pool *p);

/* ---- snapshot.c: what many clients poll, computed once per interval ------ */

typedef struct cb__snapshot cb__snapshot;

/* Compute a snapshot's text (malloc'd, NUL-terminated, its length through
 * @p len) on @p conn. @return 0 or a CB_E* code (the message in @p err). */
typedef int (*cb__snapshot_compute)(char **text, size_t *len, PGconn *conn, void *ctx,
				    cb_error *err);

/* One reader's copy: the text (the caller frees it), its age and what
 * computing it took, in seconds, and how many texts were computed so far. */
typedef struct cb__snapshot_view {
	char *text;
	size_t len;
	double age, took;
	unsigned long computed;
} cb__snapshot_view;

/* A snapshot computed by @p fn (with @p ctx) on a connection of @p pool
 * (borrowed; free the snapshot first) and reused for @p interval seconds
 * (0: every request asks for a new one, never two computed at once).
 * @return 0 or CB_ENOMEM. */
int cb__snapshot_new(cb__snapshot **out, double interval, cb__pool *pool, cb__snapshot_compute fn,
		     void *ctx, cb_error *err);
/* The snapshot: reused while younger than the interval, else computed on a
 * thread of its own with a connection of the pool (one computation at a
 * time, joined by every request that comes meanwhile). A request waits for
 * it at most a second when there is an older text to serve instead (v->age
 * says how old), else to its end. @return 0; else the computation's error
 * (CB_ERETRY: no pooled connection, CB_EDB...), which every request that
 * waited for it shares. */
int cb__snapshot_get(cb__snapshot *s, cb__snapshot_view *v, cb_error *err);
/* Make the next request compute it again (an action changed what it shows);
 * a computation under way when this is called is not reused either. */
void cb__snapshot_invalidate(cb__snapshot *s);
void cb__snapshot_free(cb__snapshot *s);

/* ---- server.c: the server's state ---------------------------------------- */

#define CB__CONSOLE_BODY_MAX (64 * 1024) /* request bodies above this: 413 */

/* An allowed Host: a lower-case name or [IPv6] literal and a port; port
 * CB__HOST_OWN_PORT means the server's listening port, CB__HOST_ANY_PORT any. */
#define CB__HOST_OWN_PORT -1
#define CB__HOST_ANY_PORT -2
typedef struct cb__host {
	char name[256];
	int port;
} cb__host;

typedef struct cb__console {
	struct MHD_Daemon *daemon;
	cb__pool *pool;
	char *token;             /* the admin token, or NULL: read-only */
	char *job_names;         /* the program's jobs as a JSON array text, or NULL */
	const char *const *jobs; /* the same names (borrowed from the options) */
	size_t njobs;
	const char *conninfo;          /* as given (borrowed), for the jobs restart spawns */
	const struct cb_registry *reg; /* the program's jobs (borrowed): declared parameters */
	FILE *log;                     /* serve's log: what the actions did */
	double launch_wait;            /* seconds a launch waits for its outcome */
	cb__snapshot *metrics;         /* /metrics' text */
	cb__snapshot *overview;        /* /api/v1/jobs' rows, as JSON text */
	atomic_int stopping;           /* set on SIGTERM: replies close their connection */
	pthread_mutex_t lock;
	long in_flight; /* requests between their first call and their completion */
	/* The names a request's Host (and an action's Origin) may give: the
	 * listening address's own, then --allowed-host's (lower case). */
	cb__host *hosts;
	size_t nhosts;
	int any_ip;             /* listening on a wildcard address: any IP literal is ours */
	atomic_int port;        /* the listening port, once bound */
	struct cb__slot *slots; /* connections still sending a request head */
} cb__console;

/* hosts.c: fill c->hosts from the listening address (@p family 4 or 6,
 * @p addr its literal) and the --allowed-host values. @return 0, CB_EINVAL
 * (a bad value, named) or CB_ENOMEM. */
int cb__hosts_build(cb__console *c, int family, const char *addr, const char *const *allowed,
		    size_t nallowed, cb_error *err);
/* Does the authority @p a (NAME[:PORT] or [IPv6][:PORT], @p len bytes) name
 * this server? */
int cb__host_allowed(cb__console *c, const char *a, size_t len);

/* ---- one request ---------------------------------------------------------- */

typedef struct cb__request {
	cb__console *console;
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	const char *id; /* the {id} segment of a pattern route (owned by the request) */
	char *id_buf;
	int api;           /* a JSON route: errors and caching as the API's */
	const char *allow; /* the methods of its route, for a 405 */
	int replied;
	enum MHD_Result result;
	/* The body as it arrives (POST); too_large once it passed the limit. */
	char *body;
	size_t body_len;
	int too_large;
	int counted;        /* counted in console->in_flight */
	int auth_challenge; /* a 401: the reply says which scheme (Bearer) */
} cb__request;

typedef void (*cb__handler)(cb__request *r);

/* ---- list.c: the read-only lists ------------------------------------------- */

/*
 * A list is a route row, not a handler: the row names its query parameters
 * and the call that fetches its rows, and one handler (cb__list_serve) does
 * the rest for every list, in this order: unknown or repeated query keys
 * (400), the path's check, each parameter in the row's order (400 naming
 * it), the list's own check; then a pooled connection (503 when none came
 * free), the call, the connection back, and the document:
 * {ROWS: [...], NEXT: cursor} unless the list builds its own.
 */

typedef enum cb__qkind {
	CB__Q_INT,  /* an integer in [min, max]; dflt when absent */
	CB__Q_TEXT, /* 1..max bytes of UTF-8 text, no control characters; NULL when absent */
	CB__Q_TIME  /* an ISO-8601 timestamp; NULL when absent */
} cb__qkind;

typedef struct cb__qparam {
	const char *key; /* NULL ends a list's parameters */
	cb__qkind kind;
	long long min, max, dflt;
} cb__qparam;

#define CB__QPARAMS_MAX 8 /* as many as cb__query_only tells apart */

/* A list's query, checked: each value by its key (borrowed from the request). */
typedef struct cb__qargs {
	const cb__qparam *params;
	long long num[CB__QPARAMS_MAX];
	const char *text[CB__QPARAMS_MAX];
} cb__qargs;

/* The value of @p key, a parameter of the list (CB__Q_INT), or 0. */
long long cb__qargs_int(const cb__qargs *a, const char *key);
/* The value of @p key (CB__Q_TEXT, CB__Q_TIME), or NULL when absent. */
const char *cb__qargs_text(const cb__qargs *a, const char *key);

/* What a list's call fetched: its rows, and where the next page starts
 * when the call knows it (cursor lists leave it NULL). Both new. */
typedef struct cb__page {
	json_t *rows;
	json_t *next;
} cb__page;

typedef struct cb__list {
	const char *rows_key;    /* the document's member for the rows: "jobs" */
	const cb__qparam *query; /* the query's keys, in the order they are checked; NULL: none */
	/* The path's {id} segment checked before the query's values, and the
	 * values checked together after them: 0, or -1 having replied. NULL: none. */
	int (*path)(cb__request *r);
	int (*check)(cb__request *r, const cb__qargs *a);
	/* The call, on a borrowed connection: 0 and *out filled, or < 0 and
	 * @p err says why (whatever it put in *out is freed). */
	int (*fetch)(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
		     cb_error *err);
	/* Keyset paging: a full page ("limit" rows) continues before its last
	 * row's @c cursor member, a shorter one nowhere (null). NULL: the call
	 * says (next) or the list is not paged. */
	const char *cursor;
	const char *next_key; /* the document's member for the next page; NULL: none */
	/* The document from @p rows and @p next (both stolen), when more than
	 * {ROWS, NEXT}; NULL: just those. */
	json_t *(*doc)(cb__request *r, const cb__qargs *a, json_t *rows, json_t *next);
} cb__list;

/* Serve GET/HEAD of the list @p l. */
void cb__list_serve(cb__request *r, const cb__list *l);

/* ---- router.c: the route table -------------------------------------------- */

typedef struct cb__route {
	const char *pattern;  /* "/api/v1/executions/{id}"; "{id}" matches one segment */
	cb__handler get;      /* also serves HEAD; NULL: an action (GET is 405) or a list */
	cb__handler post;     /* actions (admin token required); NULL: none */
	int api;              /* JSON replies, no-store */
	const cb__list *list; /* a read-only list: GET and HEAD serve it */
} cb__route;

/* Route and run a complete request (the body, if any, is in r->body). */
void cb__route_request(cb__request *r);

/* ---- reply.c: replies ------------------------------------------------------ */

/* Reply with @p doc (stolen) as JSON. */
void cb__reply_json(cb__request *r, unsigned status, json_t *doc);
/* Reply {"error": {"status", "message"}}; the message is made valid UTF-8. */
void cb__reply_error(cb__request *r, unsigned status, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;
/* Reply with @p len bytes of @p data (copied) as @p content_type. */
void cb__reply_bytes(cb__request *r, unsigned status, const char *content_type, const void *data,
		     size_t len);
/* The same with @p data (malloc'd) taken over: freed by the reply. */
void cb__reply_take(cb__request *r, unsigned status, const char *content_type, char *data,
		    size_t len);
/* The error reply for a repository failure: 503 when the database cannot be
 * reached or no connection came free, else 500; the message is @p err's. */
void cb__reply_repo_error(cb__request *r, int code, const cb_error *err);
/* A new JSON string of @p s with invalid UTF-8 replaced (never NULL unless
 * memory ran out). */
json_t *cb__json_text(const char *s);

/* ---- query.c: the query string ------------------------------------------- */

/* Reply 400 (and return -1) if the query string has a key not in @p allowed
 * (NULL-terminated) or one of them twice. */
int cb__query_only(cb__request *r, const char *const *allowed);
/* The value of query key @p key, or NULL. Borrowed from the request. */
const char *cb__query_get(cb__request *r, const char *key);
/* Query key @p key as an integer in [min, max] into @p out (@p dflt when
 * absent); else reply 400 naming the parameter and return -1. */
int cb__query_int(cb__request *r, const char *key, long long min, long long max, long long dflt,
		  long long *out);
/* Query key @p key as an ISO-8601 timestamp (NULL when absent), else 400. */
int cb__query_time(cb__request *r, const char *key, const char **out);
/* Query key @p key as text of 1..@p max_len bytes of valid UTF-8 without
 * control characters (NULL when absent), else 400. */
int cb__query_text(cb__request *r, const char *key, size_t max_len, const char **out);
/* Non-zero if @p s is a timestamp: YYYY-MM-DD, optionally followed by 'T' or
 * ' ' and HH:MM[:SS[.fraction]], optionally by 'Z' or +HH[:MM] / -HH[:MM];
 * every field in range (the day for its month and year). */
int cb__is_iso_time(const char *s);
/* Parse a positive decimal id ("1".."9223372036854775807", digits only). */
int cb__parse_id(long long *out, const char *s);

/* ---- the handlers: api_*.c, assets.c ------------------------------------ */

void cb__api_healthz(cb__request *r);
void cb__api_readyz(cb__request *r);
void cb__api_metrics(cb__request *r);
void cb__api_jobs(cb__request *r);
/* The snapshots' computations (@p ctx: the console, for the jobs). */
int cb__metrics_compute(char **text, size_t *len, PGconn *conn, void *ctx, cb_error *err);
int cb__jobs_compute(char **text, size_t *len, PGconn *conn, void *ctx, cb_error *err);
void cb__api_info(cb__request *r);
void cb__api_execution(cb__request *r);
void cb__api_execution_skips(cb__request *r);
void cb__api_execution_log(cb__request *r);

/* The lists' calls and checks (the lists themselves are rows in router.c). */
int cb__fetch_executions(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			 cb_error *err);
int cb__check_executions(cb__request *r, const cb__qargs *a);
json_t *cb__doc_executions(cb__request *r, const cb__qargs *a, json_t *rows, json_t *next);
int cb__fetch_locks(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a, cb_error *err);
int cb__fetch_lock_audit(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			 cb_error *err);
int cb__fetch_schedules(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			cb_error *err);
int cb__fetch_schedule_firings(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			       cb_error *err);
int cb__check_schedule_name(cb__request *r);
json_t *cb__doc_schedule_firings(cb__request *r, const cb__qargs *a, json_t *rows, json_t *next);

/* statuses.c: the execution statuses' names, and which are live, as one
 * table for the API: /api/v1/info shows it, the executions filter checks
 * against it. */
/* {"statuses": [names], "live_statuses": [names]} members added to @p doc. */
int cb__statuses_describe(json_t *doc);
/* Non-zero if @p name is a status's name. */
int cb__status_known(const char *name);
/* "STARTING, STARTED, ...", the names for a message. */
void cb__statuses_list(char *out, size_t size);

/* api_actions.c: POST only, past the router's read-only, origin and token
 * checks; each does what the CLI's command does, recorded the same way. */
void cb__api_stop(cb__request *r);
void cb__api_abandon(cb__request *r);
void cb__api_restart(cb__request *r);
void cb__api_unlock(cb__request *r);

/* spawn.c: a job started from the console. */
typedef struct cb__job_child cb__job_child;
/* Start `/proc/self/exe ARGV...` (argv[0] is its name) as a job of its own,
 * in its own session, its output copied to serve's log by a thread that reaps
 * it and logs how it ended (@p what: "restart of execution 7"). @return 0
 * with @p out, which cb__spawn_answer takes, or -1 having replied. */
int cb__spawn_job(cb__request *r, char *const argv[], const char *what, cb__job_child **out);
/* Answer with what happened to @p ch (taken), waiting at most @p seconds:
 * 201 {job_name, job_execution_id, status, pid, href} once it recorded its
 * execution; when it exited first, its own last message, 409 (lock held,
 * instance complete), 400 (invalid input), 503 (database out of reach) or
 * 500; 202 {pid, status: STARTING} when neither happened in time. */
void cb__spawn_answer(cb__request *r, cb__job_child *ch, const char *job_name, double seconds);
/* "console@ADDRESS", the client's, as the audit names an action's actor. */
void cb__request_actor(cb__request *r, char *out, size_t size);

/* api_schedules.c: the schedules, their firings and actions; a job's
 * declared parameters and a launch from the console. */
void cb__api_schedule(cb__request *r);
void cb__api_schedule_pause(cb__request *r);
void cb__api_schedule_resume(cb__request *r);
void cb__api_schedule_fire(cb__request *r);
/* api_backfill.c: a schedule's backfill, and its cancel. */
void cb__api_schedule_backfill(cb__request *r);
void cb__api_schedule_backfill_cancel(cb__request *r);
void cb__api_job(cb__request *r);
void cb__api_job_launch(cb__request *r);
/* Mark in /api/v1/jobs' list (@p jobs) the jobs whose schedules are all
 * paused ("schedules_paused": true), so that they do not look unscheduled. */
int cb__jobs_mark_paused(json_t *jobs, PGconn *conn, cb_error *err);

/* A static asset built into the binary (the dashboard's files). */
typedef struct cb__asset {
	const char *path;
	const char *content_type;
	const unsigned char *data;
	size_t len;
} cb__asset;

/* The embedded files (generated from console/assets/ at build time). */
extern const cb__asset cb__assets[];
extern const size_t cb__assets_count;

/* The asset served at @p path ("/" is "/index.html"), or NULL. */
const cb__asset *cb__asset_find(const char *path);

/* Non-zero if the request carries the admin token (header "Authorization:
 * Bearer TOKEN", compared in constant time); always 0 on a read-only
 * server. For the POST actions. */
int cb__request_is_admin(cb__request *r);

#endif
