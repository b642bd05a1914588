/* The serve tests' HTTP side (serve_client.h). */
#include "serve_client.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cbtest.h"

int read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/* Start `cbatch-examples --db DB serve --listen LISTEN ARGS...` and read its
 * port from the start line ("serve: listening on http://HOST:PORT ...").
 * @return 0 or -1 (a failure recorded). */
int server_start_on(struct server *s, const char *conninfo, const char *listen,
		    const char *const *args)
{
	/* In text "serve: listening on ...", in JSON the message of the line. */
	static const char prefix[] = "listening on http://";
	const char *argv[24];
	char text[4096];
	const char *at;
	size_t n = 0;
	static int seq;

	snprintf(s->log, sizeof(s->log), "%s/serve-%d-%d.log", cbt_tmpdir(), (int)getpid(), ++seq);
	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = conninfo;
	argv[n++] = "serve";
	argv[n++] = "--listen";
	argv[n++] = listen;
	while (args && *args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	s->port = 0;
	s->pid = cbt_spawn(argv, s->log);
	if (s->pid < 0)
		return -1;
	/* 60 s: a sanitizer build on a loaded machine starts slowly. */
	for (double deadline = cbt_now() + 60; cbt_now() < deadline;) {
		read_file(s->log, text, sizeof(text));
		if ((at = strstr(text, prefix)) != NULL && strchr(at, '\n')) {
			const char *sp = strchr(at + sizeof(prefix) - 1, ' ');
			const char *colon = at;

			for (const char *q = at + sizeof(prefix) - 1; sp && q < sp; q++)
				if (*q == ':')
					colon = q;
			s->port = atoi(colon + 1);
			return 0;
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = -1;
			CBT_FAILF("serve exited at start: %s", text);
			return -1;
		}
		cbt_sleep_ms(10);
	}
	CBT_FAILF("serve did not start in 60 s: %s", text);
	return -1;
}

int server_start(struct server *s, const char *conninfo, const char *const *args)
{
	return server_start_on(s, conninfo, "127.0.0.1:0", args);
}

/* SIGTERM and wait. @return its exit status. */
int server_stop(struct server *s)
{
	int rc;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	rc = cbt_wait_timeout(s->pid, 30000);
	s->pid = -1;
	if (rc != 0) {
		/* What it said last is the one clue a CI log keeps of why. */
		char text[4096];
		FILE *f = fopen(s->log, "rb");
		size_t n = 0;

		if (f) {
			if (fseek(f, -(long)(sizeof(text) - 1), SEEK_END) != 0)
				rewind(f);
			n = fread(text, 1, sizeof(text) - 1, f);
			fclose(f);
		}
		text[n] = '\0';
		fprintf(stderr, "serve exited %d; the end of %s:\n%s\n", rc, s->log, text);
	}
	return rc;
}

/* ---- an HTTP client ------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	char *b = realloc(r->body, r->len + sz * n + 1);

	if (!b)
		return 0;
	memcpy(b + r->len, p, sz * n);
	r->len += sz * n;
	b[r->len] = '\0';
	r->body = b;
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t k = sz * n;

	/* Only the last response's headers (after a 100 Continue, say). */
	if (strncmp(p, "HTTP/", 5) == 0)
		r->hlen = 0;
	if (r->hlen + k < sizeof(r->headers)) {
		memcpy(r->headers + r->hlen, p, k);
		r->hlen += k;
		r->headers[r->hlen] = '\0';
	}
	return k;
}

void resp_free(struct resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

const char *http_host = "127.0.0.1";

/* One request. @p body may be NULL; @p headers extra "Name: value" lines
 * (NULL-terminated) or NULL. */
int http(struct resp *r, int port, const char *method, const char *path, const char *body,
	 size_t body_len, const char *const *headers)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hs = NULL;
	char url[4096];

	memset(r, 0, sizeof(*r));
	r->body = calloc(1, 1);
	if (!c)
		return -1;
	snprintf(url, sizeof(url), "http://%s:%d%s", http_host, port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	for (; headers && *headers; headers++)
		hs = curl_slist_append(hs, *headers);
	if (hs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	r->curl_rc = (int)curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hs);
	curl_easy_cleanup(c);
	return r->curl_rc == CURLE_OK ? 0 : -1;
}

/* The value of response header @p name (case-insensitive) into @p buf, or NULL. */
const char *header(const struct resp *r, const char *name, char *buf, size_t size)
{
	const char *p = r->headers;
	size_t n = strlen(name);

	while (*p) {
		const char *eol = strstr(p, "\r\n");
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1;

			while (*v == ' ')
				v++;
			snprintf(buf, size, "%.*s", (int)(len - (size_t)(v - p)), v);
			return buf;
		}
		p += len + (eol ? 2 : 0);
	}
	return NULL;
}

/* ---- raw sockets ---------------------------------------------------------- */

int tcp_from(const char *from, int port)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, from, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

long raw_status(const char *from, int port, const char *request, double timeout)
{
	struct timeval tv = { (time_t)timeout, (suseconds_t)((timeout - (long)timeout) * 1e6) };
	char buf[64];
	size_t got = 0;
	long status = -1;
	int fd = tcp_from(from, port);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, request, strlen(request), MSG_NOSIGNAL) == (ssize_t)strlen(request)) {
		while (got < 12) {
			ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

			if (n <= 0)
				break;
			got += (size_t)n;
		}
		buf[got] = '\0';
		if (got >= 12 && strncmp(buf, "HTTP/1.", 7) == 0)
			status = strtol(buf + 9, NULL, 10);
	}
	close(fd);
	return status;
}
