/*
 * The query string: only the keys a route knows, each at most once, and
 * every value checked before it goes anywhere near SQL (where it travels as
 * a parameter). A bad value is a 400 that names the parameter.
 */
#include "console.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

struct scan {
	const char *const *allowed;
	const char *bad;  /* first unknown key */
	const char *dup;  /* first repeated key */
	unsigned seen[8]; /* count per allowed key */
};

static enum MHD_Result scan_key(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct scan *s = cls;
	size_t i;

	(void)kind, (void)value;
	for (i = 0; s->allowed[i]; i++)
		if (strcmp(s->allowed[i], key) == 0)
			break;
	if (!s->allowed[i]) {
		if (!s->bad)
			s->bad = key;
	} else if (i < 8 && ++s->seen[i] == 2 && !s->dup)
		s->dup = key;
	return MHD_YES;
}

int cb__query_only(cb__request *r, const char *const *allowed)
{
	static const char *const none[] = { NULL };
	struct scan s = { allowed ? allowed : none, NULL, NULL, { 0 } };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, scan_key, &s);
	if (s.bad) {
		char shown[256];

		cb__utf8_sanitize(shown, sizeof(shown), s.bad);
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "unknown query parameter '%s'", shown);
		return -1;
	}
	if (s.dup) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "query parameter '%s' given twice", s.dup);
		return -1;
	}
	return 0;
}

const char *cb__query_get(cb__request *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* The value of @p key for a message: valid UTF-8, cut. */
static const char *shown(char *buf, size_t size, const char *v)
{
	cb__utf8_sanitize(buf, size, v ? v : "");
	return buf;
}

int cb__parse_id(long long *out, const char *s)
{
	char *end;
	long long v;

	if (!s || !isdigit((unsigned char)s[0]))
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v <= 0)
		return -1;
	*out = v;
	return 0;
}

int cb__query_int(cb__request *r, const char *key, long long min, long long max, long long dflt,
		  long long *out)
{
	const char *v = cb__query_get(r, key);
	char buf[128];
	long long n;

	*out = dflt;
	if (!v && !MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key),
						 NULL, NULL))
		return 0;
	if (v && strcmp(v, "0") == 0)
		n = 0;
	else if (cb__parse_id(&n, v) < 0) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid %s '%s': expected an integer %lld..%lld", key,
				shown(buf, sizeof(buf), v), min, max);
		return -1;
	}
	if (n < min || n > max) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "invalid %s '%s': expected %lld..%lld",
				key, shown(buf, sizeof(buf), v), min, max);
		return -1;
	}
	*out = n;
	return 0;
}

/* @p n digits at @p s as a number into @p out. */
static int digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int cb__is_iso_time(const char *s)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec = 0, oh, om = 0, leap;

	if (!s || strlen(s) < 10 || digits(s, 4, &y) < 0 || s[4] != '-' ||
	    digits(s + 5, 2, &mo) < 0 || s[7] != '-' || digits(s + 8, 2, &d) < 0)
		return 0;
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap))
		return 0;
	s += 10;
	if (!*s)
		return 1;
	if ((*s != 'T' && *s != ' ') || digits(s + 1, 2, &h) < 0 || s[3] != ':' ||
	    digits(s + 4, 2, &mi) < 0 || h > 23 || mi > 59)
		return 0;
	s += 6;
	if (*s == ':') {
		if (digits(s + 1, 2, &sec) < 0 || sec > 59)
			return 0;
		s += 3;
		if (*s == '.') {
			int n = 0;

			for (s++; isdigit((unsigned char)*s); s++)
				n++;
			if (n == 0 || n > 9)
				return 0;
		}
	}
	if (!*s)
		return 1;
	if (*s == 'Z')
		return s[1] == '\0';
	if ((*s != '+' && *s != '-') || digits(s + 1, 2, &oh) < 0 || oh > 14)
		return 0;
	s += 3;
	if (*s == ':')
		s++;
	if (*s && (digits(s, 2, &om) < 0 || om > 59 || s[2]))
		return 0;
	return 1;
}

int cb__query_time(cb__request *r, const char *key, const char **out)
{
	const char *v = cb__query_get(r, key);
	char buf[128];

	*out = NULL;
	if (!v && !MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key),
						 NULL, NULL))
		return 0;
	if (!cb__is_iso_time(v)) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid %s '%s': expected an ISO-8601 timestamp such as "
				"2026-06-30T12:00:00Z",
				key, shown(buf, sizeof(buf), v));
		return -1;
	}
	*out = v;
	return 0;
}

int cb__query_text(cb__request *r, const char *key, size_t max_len, const char **out)
{
	const char *v = cb__query_get(r, key);
	char buf[128];

	*out = NULL;
	if (!v && !MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key),
						 NULL, NULL))
		return 0;
	if (!v || !v[0] || strlen(v) > max_len || !cb__utf8_valid(v)) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid %s '%s': expected 1..%zu characters of UTF-8", key,
				shown(buf, sizeof(buf), v), max_len);
		return -1;
	}
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
					"invalid %s: control characters are not allowed", key);
			return -1;
		}
	*out = v;
	return 0;
}
