/* The serve tests' side of HTTP (test_serve.c, test_serve_actions.c): the
 * real server binary as a process, and a libcurl client. */
#ifndef CBT_SERVE_CLIENT_H
#define CBT_SERVE_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

/* A `serve` process. */
struct server {
	pid_t pid;
	int port;
	char log[4096];
};

/* A response: status, body (NUL-terminated), the last response's headers. */
struct resp {
	long status;
	char *body;
	size_t len;
	char headers[8192];
	size_t hlen;
	int curl_rc;
};

/* Where requests go: "127.0.0.1", or "[::1]" for an IPv6 test. */
extern const char *http_host;

/* @p path's content into @p buf. @return 0 or -1. */
int read_file(const char *path, char *buf, size_t size);

/* Start `cbatch-examples --db CONNINFO serve --listen LISTEN ARGS...` and
 * read its port from the start line. @return 0 or -1 (a failure recorded). */
int server_start_on(struct server *s, const char *conninfo, const char *listen,
		    const char *const *args);
/* The same on 127.0.0.1, any free port. */
int server_start(struct server *s, const char *conninfo, const char *const *args);
/* SIGTERM and wait. @return its exit status. */
int server_stop(struct server *s);

/* One request. @p body may be NULL; @p headers extra "Name: value" lines
 * (NULL-terminated) or NULL. @return 0, or -1 when no response came. */
int http(struct resp *r, int port, const char *method, const char *path, const char *body,
	 size_t body_len, const char *const *headers);
void resp_free(struct resp *r);
/* Header @p name of @p r into @p buf, or NULL. */
const char *header(const struct resp *r, const char *name, char *buf, size_t size);

/* A TCP connection to 127.0.0.1:@p port from the loopback address @p from
 * (any 127.x.y.z: the server sees another client address). @return the
 * socket, or -1. */
int tcp_from(const char *from, int port);
/* Send @p request whole from @p from and read the status line within
 * @p timeout seconds. @return the status, or -1 (no answer in time). */
long raw_status(const char *from, int port, const char *request, double timeout);

#endif
