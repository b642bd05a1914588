/*
 * The route table and the method rules: GET and HEAD read, POST acts,
 * anything else is 405 (as is a GET of an action). An unknown path is 404
 * for every method. (A Host that is not one of ours was answered 421 before
 * any route, in server.c.) A read-only server refuses every action (403); an
 * action must come from our own origin (403) and carry the admin token
 * (401).
 */
#include "console.h"

#include <stdlib.h>
#include <string.h>

static const cb__route routes[] = {
	{ "/healthz", cb__api_healthz, NULL, 1 },
	{ "/readyz", cb__api_readyz, NULL, 1 },
	{ "/metrics", cb__api_metrics, NULL, 1 },
	{ "/api/v1/info", cb__api_info, NULL, 1 },
	{ "/api/v1/jobs", cb__api_jobs, NULL, 1 },
	{ "/api/v1/executions", cb__api_executions, NULL, 1 },
	{ "/api/v1/executions/{id}", cb__api_execution, NULL, 1 },
	{ "/api/v1/executions/{id}/skips", cb__api_execution_skips, NULL, 1 },
	{ "/api/v1/executions/{id}/stop", NULL, cb__api_stop, 1 },
	{ "/api/v1/executions/{id}/abandon", NULL, cb__api_abandon, 1 },
	{ "/api/v1/executions/{id}/restart", NULL, cb__api_restart, 1 },
	{ "/api/v1/jobs/{id}", cb__api_job, NULL, 1 },
	{ "/api/v1/jobs/{id}/executions", NULL, cb__api_job_launch, 1 },
	{ "/api/v1/schedules", cb__api_schedules, NULL, 1 },
	{ "/api/v1/schedules/{id}", cb__api_schedule, NULL, 1 },
	{ "/api/v1/schedules/{id}/firings", cb__api_schedule_firings, NULL, 1 },
	{ "/api/v1/schedules/{id}/pause", NULL, cb__api_schedule_pause, 1 },
	{ "/api/v1/schedules/{id}/resume", NULL, cb__api_schedule_resume, 1 },
	{ "/api/v1/schedules/{id}/fire", NULL, cb__api_schedule_fire, 1 },
	{ "/api/v1/locks", cb__api_locks, NULL, 1 },
	{ "/api/v1/locks/audit", cb__api_lock_audit, NULL, 1 },
	/* Lock names are free text: theirs is every segment up to "/unlock". */
	{ "/api/v1/locks/{name}/unlock", NULL, cb__api_unlock, 1 },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

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
	r->allow = !route->get ? "POST" : route->post ? "GET, HEAD, POST" : "GET, HEAD";
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
}
