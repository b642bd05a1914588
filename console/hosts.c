/*
 * The names this server answers to. A browser sends the name it resolved as
 * Host; a page of an attacker's domain whose name was rebound to 127.0.0.1
 * sends the attacker's name. So only our own names are served: those of the
 * listening address (for loopback also localhost, 127.0.0.1 and [::1]), each
 * with our port, and the --allowed-host names of a reverse proxy. On a
 * wildcard address any IP literal is ours as well: a literal cannot be
 * rebound, only a name can.
 */
#include "console.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Split an authority into its host (with the brackets of an IPv6 literal)
 * and port (-1 when absent). @return 0, or -1 when it is malformed. */
static int split(const char *a, size_t len, const char **host, size_t *hlen, long *port)
{
	const char *colon = NULL;

	*port = -1;
	if (len == 0)
		return -1;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', len);

		if (!close)
			return -1;
		*host = a;
		*hlen = (size_t)(close - a) + 1;
		if (*hlen < len) {
			if (close[1] != ':')
				return -1;
			colon = close + 1;
		}
	} else {
		colon = memchr(a, ':', len);
		*host = a;
		*hlen = colon ? (size_t)(colon - a) : len;
	}
	if (*hlen == 0)
		return -1;
	if (colon) {
		size_t n = len - (size_t)(colon + 1 - a);
		long p = 0;

		if (n == 0 || n > 5)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (!isdigit((unsigned char)colon[1 + i]))
				return -1;
			p = p * 10 + (colon[1 + i] - '0');
		}
		if (p < 1 || p > 65535)
			return -1;
		*port = p;
	}
	return 0;
}

/* Is the host part an IP literal (a.b.c.d or [IPv6])? */
static int ip_literal(const char *h, size_t hlen)
{
	char buf[64];
	unsigned char bin[sizeof(struct in6_addr)];

	if (hlen < 3 || hlen >= sizeof(buf))
		return 0;
	if (h[0] == '[') {
		memcpy(buf, h + 1, hlen - 2);
		buf[hlen - 2] = '\0';
		return inet_pton(AF_INET6, buf, bin) == 1;
	}
	memcpy(buf, h, hlen);
	buf[hlen] = '\0';
	return inet_pton(AF_INET, buf, bin) == 1;
}

int cb__host_allowed(cb__console *c, const char *a, size_t len)
{
	const char *h;
	size_t hlen;
	long port;
	int own = atomic_load(&c->port);

	if (!a || split(a, len, &h, &hlen, &port) < 0)
		return 0;
	for (size_t i = 0; i < c->nhosts; i++) {
		const cb__host *x = &c->hosts[i];

		if (strlen(x->name) != hlen || strncasecmp(x->name, h, hlen) != 0)
			continue;
		if (x->port == CB__HOST_ANY_PORT)
			return 1;
		/* No port: the scheme's default, 80 for our plain HTTP. */
		if ((port < 0 ? 80 : port) == (x->port == CB__HOST_OWN_PORT ? own : x->port))
			return 1;
	}
	return c->any_ip && ip_literal(h, hlen) && (port < 0 ? 80 : port) == own;
}

static int add(cb__console *c, const char *name, size_t len, int port, cb_error *err)
{
	cb__host *h;

	if (len >= sizeof(h->name))
		return cb_error_set(err, CB_EINVAL, "host name '%.100s...' too long", name);
	h = realloc(c->hosts, (c->nhosts + 1) * sizeof(*h));
	if (!h)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	c->hosts = h;
	h = &c->hosts[c->nhosts++];
	for (size_t i = 0; i < len; i++)
		h->name[i] = (char)tolower((unsigned char)name[i]);
	h->name[len] = '\0';
	h->port = port;
	return 0;
}

/* A --allowed-host value: NAME or NAME:PORT, NAME a DNS name or an IP
 * literal ([IPv6] bracketed). */
static int add_allowed(cb__console *c, const char *v, cb_error *err)
{
	const char *h;
	size_t hlen, len = v ? strlen(v) : 0;
	long port;
	int ok;

	ok = len > 0 && split(v, len, &h, &hlen, &port) == 0 && hlen <= 253;
	if (ok && h[0] == '[')
		ok = ip_literal(h, hlen);
	for (size_t i = 0; ok && h[0] != '[' && i < hlen; i++)
		ok = isalnum((unsigned char)h[i]) || h[i] == '.' || h[i] == '-' || h[i] == '_';
	if (!ok)
		return cb_error_set(err, CB_EINVAL,
				    "invalid --allowed-host '%.200s': expected NAME or NAME:PORT "
				    "(a DNS name, an IPv4 address or [IPv6 address], and a port "
				    "1..65535)",
				    v ? v : "");
	return add(c, h, hlen, port < 0 ? CB__HOST_ANY_PORT : (int)port, err);
}

int cb__hosts_build(cb__console *c, int family, const char *addr, const char *const *allowed,
		    size_t nallowed, cb_error *err)
{
	static const char *const loop[] = { "localhost", "127.0.0.1", "[::1]" };
	char own[80];
	unsigned char bin[sizeof(struct in6_addr)];
	int loopback = 0, wildcard = 0, rc = 0;

	if (family == 4 && inet_pton(AF_INET, addr, bin) == 1) {
		loopback = bin[0] == 127;
		wildcard = !memcmp(bin, "\0\0\0\0", 4);
	} else if (family == 6 && inet_pton(AF_INET6, addr, bin) == 1) {
		static const unsigned char one[16] = { [15] = 1 };
		static const unsigned char zero[16] = { 0 };

		loopback = !memcmp(bin, one, 16);
		wildcard = !memcmp(bin, zero, 16);
	}
	snprintf(own, sizeof(own), family == 6 ? "[%s]" : "%s", addr);
	rc = add(c, own, strlen(own), CB__HOST_OWN_PORT, err);
	/* A wildcard is reachable through loopback too, by the same names. */
	for (size_t i = 0; rc == 0 && (loopback || wildcard) && i < 3; i++)
		rc = add(c, loop[i], strlen(loop[i]), CB__HOST_OWN_PORT, err);
	c->any_ip = wildcard;
	for (size_t i = 0; rc == 0 && i < nallowed; i++)
		rc = add_allowed(c, allowed[i], err);
	return rc;
}
