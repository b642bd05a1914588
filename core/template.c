/* Parameter templates filled from a fire instant (template.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"
#include "zone.h"

struct out {
	char buf[CB__TEMPLATE_MAX];
	size_t len;
	int over;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n >= sizeof(o->buf)) {
		o->over = 1;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void put_date(struct out *o, const cb_civil *c)
{
	char b[32];
	int n = snprintf(b, sizeof(b), "%04d-%02d-%02d", c->year, c->month, c->day);

	put(o, b, (size_t)n);
}

static void put_time(struct out *o, const cb_civil *c, int offset)
{
	char b[48];
	int n, a = offset < 0 ? -offset : offset;

	n = snprintf(b, sizeof(b), "%04d-%02d-%02dT%02d:%02d:%02d", c->year, c->month, c->day,
		     c->hour, c->minute, c->second);
	put(o, b, (size_t)n);
	if (offset == 0) {
		put(o, "Z", 1);
		return;
	}
	/* Offsets of whole minutes are the rule; a seconds part is kept if not. */
	n = a % 60 ? snprintf(b, sizeof(b), "%c%02d:%02d:%02d", offset < 0 ? '-' : '+', a / 3600,
			      a / 60 % 60, a % 60) :
		     snprintf(b, sizeof(b), "%c%02d:%02d", offset < 0 ? '-' : '+', a / 3600,
			      a / 60 % 60);
	put(o, b, (size_t)n);
}

/* {fire_date}, {fire_date-N}, {fire_date+N}: @p arg is what follows
 * "fire_date" up to the closing brace. @return 0 or -1 if malformed. */
static int put_shifted_date(struct out *o, const char *arg, size_t n, const cb__fire_vars *v)
{
	cb_civil d = v->local;
	long long days = 0;

	if (n > 0) {
		if ((arg[0] != '-' && arg[0] != '+') || n < 2 || n > 6)
			return -1;
		for (size_t i = 1; i < n; i++) {
			if (arg[i] < '0' || arg[i] > '9')
				return -1;
			days = days * 10 + (arg[i] - '0');
		}
		if (days > 36600)
			return -1;
		if (arg[0] == '-')
			days = -days;
	}
	d.hour = d.minute = d.second = 0;
	cb__civil_from_epoch(&d, cb__epoch_from_civil(&d) + days * 86400);
	put_date(o, &d);
	return 0;
}

static int placeholder(struct out *o, const char *name, size_t n, const cb__fire_vars *v)
{
	char b[32];

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
	if (n >= 9 && memcmp(name, "fire_date", 9) == 0)
		return put_shifted_date(o, name + 9, n - 9, v);
	if (IS("fire_time")) {
		put_time(o, &v->local, v->offset);
	} else if (IS("fire_utc")) {
		cb_civil u;

		cb__civil_from_epoch(&u, v->epoch);
		put_time(o, &u, 0);
	} else if (IS("fire_epoch")) {
		int k = snprintf(b, sizeof(b), "%lld", v->epoch);

		put(o, b, (size_t)k);
	} else if (IS("schedule")) {
		put(o, v->schedule ? v->schedule : "", v->schedule ? strlen(v->schedule) : 0);
	} else {
		return -1;
	}
#undef IS
	return 0;
}

int cb__template_fill(char **out, const char *tmpl, const cb__fire_vars *v, cb_error *err)
{
	struct out *o = calloc(1, sizeof(*o));
	const char *p = tmpl;

	if (!o)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	while (*p) {
		const char *close;

		if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
			put(o, p, 1);
			p += 2;
			continue;
		}
		if (*p == '}') {
			free(o);
			return cb_error_set(err, CB_EINVAL,
					    "template '%.200s': unmatched '}' at character %zu "
					    "(write }} for a literal brace)",
					    tmpl, (size_t)(p - tmpl) + 1);
		}
		if (*p != '{') {
			put(o, p++, 1);
			continue;
		}
		close = strchr(p, '}');
		if (!close || placeholder(o, p + 1, (size_t)(close - p - 1), v) < 0) {
			int n = close ? (int)(close - p + 1) : (int)strlen(p);

			free(o);
			return cb_error_set(
				err, CB_EINVAL,
				"template '%.200s': unknown placeholder '%.*s' at character %zu "
				"(known: {fire_date}, {fire_date-N}, {fire_date+N}, {fire_time}, "
				"{fire_utc}, {fire_epoch}, {schedule}; {{ and }} for braces)",
				tmpl, n > 60 ? 60 : n, p, (size_t)(p - tmpl) + 1);
		}
		p = close + 1;
	}
	if (o->over) {
		free(o);
		return cb_error_set(err, CB_EINVAL,
				    "template '%.200s': filled value longer than %d bytes", tmpl,
				    CB__TEMPLATE_MAX - 1);
	}
	*out = malloc(o->len + 1);
	if (!*out) {
		free(o);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	memcpy(*out, o->buf, o->len);
	(*out)[o->len] = '\0';
	free(o);
	return 0;
}

int cb__template_uses_fire(const char *tmpl)
{
	for (const char *p = tmpl; (p = strstr(p, "{fire_")) != NULL; p++)
		if (p == tmpl || p[-1] != '{')
			return 1;
	return 0;
}
