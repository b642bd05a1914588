/*
 * The route table and the method rules: GET and HEAD read, POST acts,
 * anything else is 405 (as is a GET of an action). An unknown path is 404
 * for every method. (A Host that is not one of ours was answered 421 before
 * any route, in server.c.) A read-only server refuses every action (403); an
 * action must come from our own origin (403) and carry the admin token
 * (401).
 */
#include "console.h"
#include "serve.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The lists' query parameters: key, kind, and for an integer its range and
 * default (for text its longest length). */
// clang-format off
#define INT(key, min, max, dflt) { key, CB__Q_INT, min, max, dflt }
#define TEXT(key, max)           { key, CB__Q_TEXT, 0, max, 0 }
#define TIME(key)                { key, CB__Q_TIME, 0, 0, 0 }
#define BEFORE                   INT("before", 1, LLONG_MAX, 0) /* a keyset cursor: 0 is none */
#define QEND                     { .key = NULL } /* designated: no field left implicit */
// clang-format on

static const cb__qparam executions_query[] = { TEXT("job", 100),
					       TEXT("status", 100),
					       TIME("from"),
					       TIME("to"),
					       INT("limit", 1, 500, 50),
					       BEFORE,
					       QEND };
/* ?all=1: every lock row, else the held and recently released ones. */
static const cb__qparam locks_query[] = { INT("all", 0, 1, 0), INT("limit", 1, 1000, 100),
					  TEXT("after", 400), QEND };
/* ?lock=NAME, ?execution=ID: that execution's own lock and its partitions'. */
static const cb__qparam audit_query[] = { TEXT("lock", 400), INT("execution", 1, LLONG_MAX, 0),
					  INT("limit", 1, 500, 50), BEFORE, QEND };
/* ?status=SKIPPED_OVERLAP: only the firings of that status. */
static const cb__qparam firings_query[] = { TEXT("status", 20), INT("limit", 1, 500, 50), BEFORE,
					    QEND };

/* A route's kind: a read (GET and HEAD), an action (POST), or a read-only
 * list given by its rows' member, its query and its call, keyset paged by a
 * cursor member of its rows or by what the call says (see cb__list). */
// clang-format off
#define GET(handler)  .get = handler, .api = 1
#define POST(handler) .post = handler, .api = 1
#define LIST(...)     .list = &(const cb__list){ __VA_ARGS__ }, .api = 1
// clang-format on

static const cb__route routes[] = {
	{ "/healthz", GET(cb__api_healthz) },
	{ "/readyz", GET(cb__api_readyz) },
	{ "/metrics", GET(cb__api_metrics) },
	{ "/api/v1/info", GET(cb__api_info) },
	{ "/api/v1/jobs", GET(cb__api_jobs) },
	{ "/api/v1/executions", LIST("executions", executions_query, .check = cb__check_executions,
				     .fetch = cb__fetch_executions, .cursor = "job_execution_id",
				     .next_key = "next_before", .doc = cb__doc_executions) },
	{ "/api/v1/executions/{id}", GET(cb__api_execution) },
	{ "/api/v1/executions/{id}/skips", GET(cb__api_execution_skips) },
	{ "/api/v1/executions/{id}/log", GET(cb__api_execution_log) },
	{ "/api/v1/executions/{id}/stop", POST(cb__api_stop) },
	{ "/api/v1/executions/{id}/abandon", POST(cb__api_abandon) },
	{ "/api/v1/executions/{id}/restart", POST(cb__api_restart) },
	{ "/api/v1/jobs/{id}", GET(cb__api_job) },
	{ "/api/v1/jobs/{id}/executions", POST(cb__api_job_launch) },
	{ "/api/v1/schedules", LIST("schedules", .fetch = cb__fetch_schedules) },
	{ "/api/v1/schedules/{id}", GET(cb__api_schedule) },
	{ "/api/v1/schedules/{id}/firings",
	  LIST("firings", firings_query, .path = cb__check_schedule_name,
	       .fetch = cb__fetch_schedule_firings, .cursor = "firing_id",
	       .next_key = "next_before", .doc = cb__doc_schedule_firings) },
	{ "/api/v1/schedules/{id}/pause", POST(cb__api_schedule_pause) },
	{ "/api/v1/schedules/{id}/resume", POST(cb__api_schedule_resume) },
	{ "/api/v1/schedules/{id}/fire", POST(cb__api_schedule_fire) },
	{ "/api/v1/schedules/{id}/backfill", POST(cb__api_schedule_backfill) },
	{ "/api/v1/schedules/{id}/backfill/cancel", POST(cb__api_schedule_backfill_cancel) },
	{ "/api/v1/locks",
	  LIST("locks", locks_query, .fetch = cb__fetch_locks, .next_key = "next_after") },
	{ "/api/v1/locks/audit", LIST("audit", audit_query, .fetch = cb__fetch_lock_audit,
				      .cursor = "audit_id", .next_key = "next_before") },
	/* Lock names are free text: theirs is every segment up to "/unlock". */
	{ "/api/v1/locks/{name}/unlock", POST(cb__api_unlock) },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

void cb__serve_routes_help(FILE *f)
{
	for (size_t i = 0; i < NROUTES; i++)
		fprintf(f, "  %-4s %s%s\n", routes[i].post ? "POST" : "GET", routes[i].pattern,
			routes[i].list ? "  (a list: ?limit= and a cursor)" : "");
}

/* Does @p path match @p pattern? The {id} segment (one, non-empty, no '/')
 * or the {name} part (non-empty, any characters: the path arrives decoded,
 * so a name's "%2F" is a '/' here) is returned through @p id / @p id_len. */
static int match(const char *pattern, const char *path, const char **id, size_t *id_len)
{
	const char *hole = strstr(pattern, "{id}");
	const char *greedy = strstr(pattern, "{name}");
	size_t pre, n, plen = strlen(path);

	if (greedy) {
		const char *suffix = greedy + 6;
		size_t slen = strlen(suffix);

		pre = (size_t)(greedy - pattern);
		if (strncmp(pattern, path, pre) != 0 || plen < pre + slen + 1 ||
		    strcmp(path + plen - slen, suffix) != 0)
			return 0;
		*id = path + pre;
		*id_len = plen - slen - pre;
		return 1;
	}
	if (!hole)
		return strcmp(pattern, path) == 0;
	pre = (size_t)(hole - pattern);
	if (strncmp(pattern, path, pre) != 0)
		return 0;
	n = strcspn(path + pre, "/");
	if (n == 0 || strcmp(hole + 4, path + pre + n) != 0)
		return 0;
	*id = path + pre;
	*id_len = n;
	return 1;
}

/* Is @p url (an Origin, or a Referer's start) this server's own origin? Its
 * host must be one of ours (the Host check's list, never the request's own
 * Host, which the page's author may choose by rebinding a name); behind a
 * TLS proxy the scheme is https. */
static int same_origin(cb__console *c, const char *url, int prefix_only)
{
	size_t n;

	if (strncmp(url, "http://", 7) == 0)
		url += 7;
	else if (strncmp(url, "https://", 8) == 0)
		url += 8;
	else
		return 0;
	n = strcspn(url, "/?#");
	if (!prefix_only && url[n])
		return 0;
	if (prefix_only && url[n] && url[n] != '/')
		return 0;
	return cb__host_allowed(c, url, n);
}

/* Did this request come from a page of ours (or from no page at all, as
 * curl's)? The Origin a browser sends with every POST decides; without one,
 * Sec-Fetch-Site, then the Referer. */
static int own_origin(cb__request *r)
{
	const char *origin = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
	const char *site = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *referer = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Referer");

	if (origin)
		return same_origin(r->console, origin, 0);
	if (site)
		return strcmp(site, "same-origin") == 0 || strcmp(site, "none") == 0;
	if (referer)
		return same_origin(r->console, referer, 1);
	return 1;
}

static int is(const char *method, const char *name)
{
	return strcmp(method, name) == 0;
}

void cb__route_request(cb__request *r)
{
	const cb__route *route = NULL;
	const char *id = NULL;
	size_t id_len = 0;
	int read = is(r->method, MHD_HTTP_METHOD_GET) || is(r->method, MHD_HTTP_METHOD_HEAD);

	for (size_t i = 0; i < NROUTES && !route; i++)
		if (match(routes[i].pattern, r->url, &id, &id_len))
			route = &routes[i];
	if (!route) {
		const cb__asset *a = cb__asset_find(r->url);

		if (!a) {
			cb__reply_error(r, MHD_HTTP_NOT_FOUND, "no such resource");
			return;
		}
		if (!read) {
			cb__reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s not allowed",
					r->method);
			return;
		}
		r->api = 0;
		cb__reply_bytes(r, MHD_HTTP_OK, a->content_type, a->data, a->len);
		return;
	}
	r->api = route->api;
	r->allow = !route->get && !route->list ? "POST" :
		   route->post                 ? "GET, HEAD, POST" :
						 "GET, HEAD";
	if (id) {
		if (!(r->id_buf = malloc(id_len + 1))) {
			r->result = MHD_NO;
			r->replied = 1;
			return;
		}
		memcpy(r->id_buf, id, id_len);
		r->id_buf[id_len] = '\0';
		r->id = r->id_buf;
	}
	if (read && route->list) {
		cb__list_serve(r, route->list);
		return;
	}
	if (read && route->get) {
		route->get(r);
		return;
	}
	if (!is(r->method, MHD_HTTP_METHOD_POST) || !route->post) {
		cb__reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED,
				"method %.20s not allowed on %.200s", r->method, route->pattern);
		return;
	}
	if (!r->console->token) {
		cb__reply_error(r, MHD_HTTP_FORBIDDEN,
				"read-only console: start serve with --admin-token-file to allow "
				"actions");
		return;
	}
	if (!own_origin(r)) {
		cb__reply_error(r, MHD_HTTP_FORBIDDEN, "cross-origin request refused");
		return;
	}
	if (!cb__request_is_admin(r)) {
		r->auth_challenge = 1;
		cb__reply_error(r, MHD_HTTP_UNAUTHORIZED,
				"missing or wrong admin token (Authorization: Bearer TOKEN)");
		return;
	}
	route->post(r);
	/* What the action changed shows in the next overview and scrape, not
	 * an interval later. */
	cb__snapshot_invalidate(r->console->metrics);
	cb__snapshot_invalidate(r->console->overview);
}
