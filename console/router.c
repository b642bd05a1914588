/*
 * The route table and the method rules: GET and HEAD read, POST acts (later
 * parts add the actions), anything else is 405. An unknown path is 404 for
 * every method. A POST needs the admin token and, from a browser, our own
 * origin; a read-only server refuses every POST.
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
	{ "/api/v1/locks", cb__api_locks, NULL, 1 },
	{ "/api/v1/locks/audit", cb__api_lock_audit, NULL, 1 },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* Does @p path match @p pattern? The {id} segment (one, non-empty, no '/')
 * is returned through @p id / @p id_len. */
static int match(const char *pattern, const char *path, const char **id, size_t *id_len)
{
	const char *hole = strstr(pattern, "{id}");
	size_t pre, n;

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
	r->allow = route->post ? "GET, HEAD, POST" : "GET, HEAD";
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
	if (read) {
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
				"this console is read-only: start serve with --admin-token-file");
		return;
	}
	if (!cb__request_is_admin(r)) {
		cb__reply_error(r, MHD_HTTP_FORBIDDEN, "missing or wrong X-Cbatch-Token");
		return;
	}
	{
		/* A browser names the page's origin: only our own may act. */
		const char *origin =
			MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
		const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");

		if (origin && (!host || strncmp(origin, "http://", 7) != 0 ||
			       strcmp(origin + 7, host) != 0)) {
			cb__reply_error(r, MHD_HTTP_FORBIDDEN, "cross-origin request refused");
			return;
		}
	}
	route->post(r);
}
