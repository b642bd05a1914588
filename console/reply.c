/* Replies: JSON documents, errors, bytes; the headers every reply carries. */
#include "console.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* What a browser may do with any of our pages: our own scripts only, no
 * plug-ins, no framing by another site; and no guessing of content types. */
#define CSP "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'"

json_t *cb__json_text(const char *s)
{
	size_t n = strlen(s ? s : "") * 3 + 1;
	char *buf = malloc(n);
	json_t *v;

	if (!buf)
		return NULL;
	cb__utf8_sanitize(buf, n, s ? s : "");
	v = json_string(buf);
	free(buf);
	return v;
}

static void queue(cb__request *r, unsigned status, struct MHD_Response *resp,
		  const char *content_type)
{
	if (!resp) {
		r->result = MHD_NO; /* out of memory: MHD closes the connection */
		r->replied = 1;
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(resp, "Content-Security-Policy", CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	/* The API and metrics are live views; only built-in assets may be kept. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				r->api ? "no-store" : "no-cache");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					r->allow ? r->allow : "GET, HEAD");
	if (status == MHD_HTTP_UNAUTHORIZED && r->auth_challenge)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"cbatch\"");
	if (r->console->stopping)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r->result = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	r->replied = 1;
}

void cb__reply_bytes(cb__request *r, unsigned status, const char *content_type, const void *data,
		     size_t len)
{
	queue(r, status, MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY),
	      content_type);
}

void cb__reply_take(cb__request *r, unsigned status, const char *content_type, char *data,
		    size_t len)
{
	/* MHD frees it with free(). */
	queue(r, status, MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE),
	      content_type);
}

void cb__reply_json(cb__request *r, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
	size_t len;

	json_decref(doc);
	if (!text) {
		r->result = MHD_NO;
		r->replied = 1;
		return;
	}
	len = strlen(text);
	/* MHD frees it with free(), as jansson's default allocator made it. */
	queue(r, status, MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE),
	      "application/json");
}

void cb__reply_error(cb__request *r, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->api = 1;
	cb__reply_json(r, status,
		       json_pack("{s:{s:i,s:o}}", "error", "status", (int)status, "message",
				 cb__json_text(msg)));
}

/* SQLSTATEs that say the repository is not there to serve (rather than that
 * a statement is wrong): no connection (08, or none at all), shutting down
 * (57), no such database (3D), out of resources (53), no batch tables (42P01),
 * a server that takes no writes (25006: a standby, or a failover under way;
 * the pool keeps no such session, so a retry can reach the new primary). */
static int unavailable(const char *sqlstate)
{
	return !sqlstate[0] || strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "57", 2) == 0 ||
	       strncmp(sqlstate, "3D", 2) == 0 || strncmp(sqlstate, "53", 2) == 0 ||
	       strcmp(sqlstate, "42P01") == 0 || strcmp(sqlstate, "25006") == 0;
}

void cb__reply_repo_error(cb__request *r, int code, const cb_error *err)
{
	char msg[CB_ERROR_MESSAGE_MAX];

	/* Connection strings can appear in libpq's messages. */
	snprintf(msg, sizeof(msg), "%s", err->message[0] ? err->message : cb_strcode(code));
	cb__redact_secrets_inplace(msg, sizeof(msg));
	if (code == CB_ENOTFOUND)
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", msg);
	else if (code == CB_ERETRY || (code == CB_EDB && unavailable(err->sqlstate)))
		cb__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", msg);
	else
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", msg);
}
