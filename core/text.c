/* Text that leaves the process: valid UTF-8, terminal escapes, redaction. */
#include "text.h"

#include <stdio.h>
#include <string.h>

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

int cb__utf8_next(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char lo = 0x80, hi = 0xBF;
	int n, i;

	if (s[0] == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		n = 2;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		n = 3;
		if (s[0] == 0xE0)
			lo = 0xA0; /* overlong below */
		else if (s[0] == 0xED)
			hi = 0x9F; /* surrogates above */
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		n = 4;
		if (s[0] == 0xF0)
			lo = 0x90;
		else if (s[0] == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else {
		return -1; /* 80..C1, F5..FF: never a lead byte */
	}
	for (i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return -i; /* the lead and the continuations so far */
		lo = 0x80;
		hi = 0xBF;
	}
	return n;
}

int cb__utf8_valid(const char *s)
{
	int k;

	if (!s)
		return 1;
	while ((k = cb__utf8_next(s)) > 0)
		s += k;
	return k == 0;
}

/* Append @p n bytes if they fit whole (one byte is kept for the NUL). */
static int put(char *out, size_t size, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > size)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

static size_t copy_text(char *out, size_t size, const char *in, int escape)
{
	size_t len = 0;
	int k;

	if (size == 0)
		return 0;
	out[0] = '\0';
	if (!in)
		return 0;
	while ((k = cb__utf8_next(in)) != 0) {
		const unsigned char *u = (const unsigned char *)in;
		char esc[8];
		const char *s = in;
		size_t n = (size_t)(k > 0 ? k : -k);

		if (k < 0) {
			s = replacement;
			k = 3;
		} else if (escape && k == 1 && (u[0] < 0x20 || u[0] == 0x7F)) {
			if (u[0] == '\n')
				snprintf(esc, sizeof(esc), "\\n");
			else if (u[0] == '\r')
				snprintf(esc, sizeof(esc), "\\r");
			else if (u[0] == '\t')
				snprintf(esc, sizeof(esc), "\\t");
			else
				snprintf(esc, sizeof(esc), "\\x%02X", u[0]);
			s = esc;
			k = (int)strlen(esc);
		} else if (escape && k == 2 && u[0] == 0xC2 && u[1] < 0xA0) {
			snprintf(esc, sizeof(esc), "\\u%04X", u[1]); /* C1: U+0080..U+009F */
			s = esc;
			k = 6;
		} else if (escape && k == 3 && u[0] == 0xE2 && u[1] == 0x80 &&
			   (u[2] == 0xA8 || u[2] == 0xA9 || (u[2] >= 0xAA && u[2] <= 0xAE))) {
			/* line/paragraph separators and bidirectional overrides */
			snprintf(esc, sizeof(esc), "\\u20%02X", u[2] - 0x80);
			s = esc;
			k = 6;
		} else if (escape && k == 3 && u[0] == 0xE2 && u[1] == 0x81 && u[2] >= 0xA6 &&
			   u[2] <= 0xA9) {
			snprintf(esc, sizeof(esc), "\\u20%02X", u[2] - 0x80 + 0x40);
			s = esc;
			k = 6;
		}
		if (put(out, size, &len, s, (size_t)k) < 0)
			break;
		in += n;
	}
	return len;
}

size_t cb__utf8_sanitize(char *out, size_t size, const char *in)
{
	return copy_text(out, size, in, 0);
}

size_t cb__term_escape(char *out, size_t size, const char *in)
{
	return copy_text(out, size, in, 1);
}

/* ---- redaction ------------------------------------------------------------ */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Length of @p word if @p s starts with it, ignoring ASCII case; else 0. */
static size_t starts(const char *s, const char *word)
{
	size_t i;

	for (i = 0; word[i]; i++)
		if (lower((unsigned char)s[i]) != word[i])
			return 0;
	return i;
}

static int space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Bytes up to the '@' that ends a URI's user info after @p p, or 0 if it has
 * no password (no ':' before the last '@'). @p colon receives the ':' offset. */
static size_t uri_password(const char *p, size_t *colon)
{
	const char *at = strrchr(p, '@'), *c;

	if (!at)
		return 0;
	c = memchr(p, ':', (size_t)(at - p));
	if (!c)
		return 0;
	*colon = (size_t)(c - p);
	return (size_t)(at - p);
}

size_t cb__redact_secrets(char *out, size_t size, const char *in)
{
	size_t len = 0, i = 0, n, colon;

	if (size == 0)
		return 0;
	out[0] = '\0';
	if (!in)
		return 0;
	while (in[i]) {
		if ((n = starts(in + i, "postgresql://")) || (n = starts(in + i, "postgres://"))) {
			size_t end = uri_password(in + i + n, &colon);

			if (put(out, size, &len, in + i, n) < 0)
				break;
			i += n;
			if (end) {
				if (put(out, size, &len, in + i, colon + 1) < 0 ||
				    put(out, size, &len, "***", 3) < 0)
					break;
				i += end; /* the '@' is copied next */
			}
			continue;
		}
		if ((n = starts(in + i, "password"))) {
			size_t j = i + n;

			while (space(in[j]))
				j++;
			if (in[j] == '=') {
				j++;
				while (space(in[j]))
					j++;
				if (put(out, size, &len, in + i, j - i) < 0 ||
				    put(out, size, &len, "***", 3) < 0)
					break;
				if (in[j] == '\'') {
					/* libpq's quoting: '...' with \' and \\ escapes */
					for (j++; in[j] && in[j] != '\''; j++)
						if (in[j] == '\\' && in[j + 1])
							j++;
					if (in[j] == '\'')
						j++;
				} else {
					while (in[j] && !space(in[j]))
						j++;
				}
				i = j;
				continue;
			}
		}
		if (put(out, size, &len, in + i, 1) < 0)
			break;
		i++;
	}
	return len;
}

void cb__redact_secrets_inplace(char *s, size_t size)
{
	char tmp[4096];

	if (!s || size == 0)
		return;
	if (size > sizeof(tmp))
		size = sizeof(tmp);
	cb__redact_secrets(tmp, size, s);
	memcpy(s, tmp, strlen(tmp) + 1);
}

/* ---- does a message quote a connection string's password? ---------------- */

/* Does @p msg contain a part of the @p n bytes at @p s: the whole of a
 * short one, else any 4 consecutive bytes of it? */
static int quotes(const char *msg, const char *s, size_t n)
{
	size_t w = n < 4 ? n : 4;

	if (n == 0)
		return 0;
	for (size_t i = 0; i + w <= n; i++)
		for (const char *m = msg; (m = strchr(m, s[i])) != NULL; m++)
			if (strncmp(m, s + i, w) == 0)
				return 1;
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 :
				      -1;
}

/* One password candidate: as written, percent-decoded (where decodable),
 * and each piece between raw '@'s (libpq ends a URI's user info at the
 * first '@', so the rest of the password reaches its host name). */
static int candidate_quoted(const char *msg, const char *s, size_t n)
{
	char dec[1024];
	size_t d = 0, start = 0;

	if (quotes(msg, s, n))
		return 1;
	for (size_t i = 0; i <= n; i++)
		if (i == n || s[i] == '@') {
			if (i > start && i - start < n && quotes(msg, s + start, i - start))
				return 1;
			start = i + 1;
		}
	for (size_t i = 0; i < n && d < sizeof(dec); i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			dec[d++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			dec[d++] = s[i];
		}
	}
	return d != n && quotes(msg, dec, d);
}

int cb__conninfo_secret_in(const char *conninfo, const char *msg)
{
	const char *p = conninfo;
	size_t n, colon;
	int uri;

	if (!conninfo || !msg)
		return 0;
	uri = starts(p, "postgresql://") || starts(p, "postgres://");
	if (uri) {
		const char *info = strstr(p, "://") + 3;
		size_t end = uri_password(info, &colon);

		/* From the first ':' of the user info to its last '@'. */
		if (end && candidate_quoted(msg, info + colon + 1, end - colon - 1))
			return 1;
	}
	for (const char *k = p; *k; k++) {
		const char *v;
		char un[1024];
		size_t u = 0;

		if (!(n = starts(k, "password")))
			continue;
		v = k + n;
		while (space(*v))
			v++;
		if (*v != '=')
			continue;
		v++;
		while (space(*v))
			v++;
		if (*v == '\'') {
			/* libpq's quoting: the value unescaped, and as written */
			const char *q = v + 1;

			for (; *q && *q != '\''; q++) {
				if (*q == '\\' && q[1])
					q++;
				if (u < sizeof(un))
					un[u++] = *q;
			}
			if (candidate_quoted(msg, v + 1, (size_t)(q - v - 1)) ||
			    candidate_quoted(msg, un, u))
				return 1;
			continue;
		}
		n = uri ? strcspn(v, " \t\n\r\f\v&#") : strcspn(v, " \t\n\r\f\v");
		if (candidate_quoted(msg, v, n))
			return 1;
	}
	return 0;
}
