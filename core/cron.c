/*
 * Cron expressions (include/cbatch/cron.h): one table of fields drives the
 * parser, each field becomes a bitset, and the search for the next time walks
 * months, then days (as a 31-bit mask per month), then the time of day.
 */
#include "cbatch/cron.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "calendar.h"

enum {
	F_SEC,
	F_MIN,
	F_HOUR,
	F_DOM,
	F_MON,
	F_DOW,
	F_COUNT
};

static const char *const month_names[] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL",
					   "AUG", "SEP", "OCT", "NOV", "DEC", NULL };
static const char *const day_names[] = { "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL };

/* The one table of fields: parsing is the same code for all six. */
static const struct field {
	const char *name;
	int min, max;
	const char *const *names; /* names[i] stands for min + i */
} fields[F_COUNT] = {
	[F_SEC] = { "second", 0, 59, NULL },       [F_MIN] = { "minute", 0, 59, NULL },
	[F_HOUR] = { "hour", 0, 23, NULL },        [F_DOM] = { "day-of-month", 1, 31, NULL },
	[F_MON] = { "month", 1, 12, month_names }, [F_DOW] = { "day-of-week", 0, 7, day_names },
};

static const struct macro {
	const char *name, *expansion;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

struct cb_cron {
	uint64_t bits[F_COUNT]; /* bit v: value v matches (day-of-week 7 folded into 0) */
	int has_seconds;
	int dom_star, dow_star; /* the field's text starts with '*' or '?' (Vixie rule) */
	int time_star;          /* the minute or the hour field's text starts with '*' */
	uint32_t dom_last;      /* bit n: "L-n" (L is L-0) */
	int dom_lastw;          /* "LW" */
	uint32_t dom_nearw;     /* bit n: "nW" */
	uint8_t dow_last;       /* bit d: "dL" */
	uint8_t dow_nth[7];     /* bit k-1 of [d]: "d#k" */
};

/* Parsing state: the whole expression for messages, the field being read. */
struct parser {
	const char *expr; /* as the caller wrote it (positions count in it) */
	const char *text; /* what is parsed: expr, or a macro's expansion */
	cb_error *err;
	cb_cron *c;
	int field;
};

/* ASCII only, whatever the locale (a Turkish locale upper-cases 'i' differently). */
static int is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static int is_alpha(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int up(int ch)
{
	return ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch;
}

/* A position in the text as the caller counts it: 1-based, in expr. */
static int position(const struct parser *p, const char *at)
{
	return p->text == p->expr ? (int)(at - p->expr) + 1 : 1;
}

/* The element (up to ',' or a blank) starting at @p at, for messages. */
static int element_len(const char *at)
{
	int n = 0;

	while (at[n] && at[n] != ',' && at[n] != ' ' && at[n] != '\t' && n < 40)
		n++;
	return n;
}

static int fail_at(struct parser *p, const char *at, const char *what)
{
	return cb_error_set(p->err, CB_EINVAL, "%s field: %.*s at character %d %s",
			    fields[p->field].name, element_len(at), at, position(p, at), what);
}

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static int is_end(char ch)
{
	return ch == '\0' || ch == ',' || is_blank(ch);
}

/*
 * A number or (for month and day-of-week) a name at *s; *s moves past it.
 * Values are checked against the field's range by the caller, with the text.
 * Returns 0 or CB_EINVAL.
 */
static int value(struct parser *p, const char **s, int *out)
{
	const struct field *f = &fields[p->field];
	const char *at = *s;

	if (is_digit(*at)) {
		long v = 0;

		/* Cap the digits so that no input overflows; 999999 is out of every range. */
		while (is_digit(*at)) {
			if (v < 1000000)
				v = v * 10 + (*at - '0');
			at++;
		}
		*out = (int)v;
		*s = at;
		return 0;
	}
	if (f->names && is_alpha(at[0]) && is_alpha(at[1]) && is_alpha(at[2])) {
		for (int i = 0; f->names[i]; i++)
			if (up(at[0]) == f->names[i][0] && up(at[1]) == f->names[i][1] &&
			    up(at[2]) == f->names[i][2]) {
				*out = f->min + i;
				*s = at + 3;
				return 0;
			}
		return cb_error_set(p->err, CB_EINVAL,
				    "%s field: unknown name \"%.3s\" at character %d", f->name, at,
				    position(p, at));
	}
	if (*at == '\0' || *at == ',' || is_blank(*at))
		return cb_error_set(p->err, CB_EINVAL, "%s field: empty list item at character %d",
				    f->name, position(p, at));
	return fail_at(p, at, "is not a value");
}

/* The value read from @p at to @p end is in the field's range; the message shows the text. */
static int in_range(struct parser *p, const char *at, const char *end, int v)
{
	const struct field *f = &fields[p->field];

	if (v >= f->min && v <= f->max)
		return 0;
	return cb_error_set(
		p->err, CB_EINVAL, "%s field: %.*s at character %d is out of range %d-%d", f->name,
		(int)(end - at > 40 ? 40 : end - at), at, position(p, at), f->min, f->max);
}

static void set_range(struct parser *p, int lo, int hi, int step)
{
	for (int v = lo; v <= hi; v += step)
		p->c->bits[p->field] |= (uint64_t)1 << (p->field == F_DOW && v == 7 ? 0 : v);
}

/* "L", "L-n", "LW" in day-of-month, at @p at (which starts with L). */
static int dom_last(struct parser *p, const char **s)
{
	const char *at = *s, *q = at + 1;
	int n = 0;

	if (up(*q) == 'W') {
		p->c->dom_lastw = 1;
		q++;
	} else if (*q == '-') {
		q++;
		if (!is_digit(*q))
			return fail_at(p, at, "is not L-n");
		if (value(p, &q, &n) != 0)
			return CB_EINVAL;
		if (n > 30)
			return cb_error_set(p->err, CB_EINVAL,
					    "day-of-month field: L-%d at character "
					    "%d is out of range L-0 to L-30",
					    n, position(p, at));
		p->c->dom_last |= (uint32_t)1 << n;
	} else {
		p->c->dom_last |= 1;
	}
	if (!is_end(*q))
		return fail_at(p, at, "is not L, L-n or LW");
	*s = q;
	return 0;
}

/* One list element at *s: *s moves past it. */
static int element(struct parser *p, const char **s)
{
	const struct field *f = &fields[p->field];
	const char *at = *s, *q = at;
	int lo, hi, step = 1, ranged = 0;

	if (p->field == F_DOM && up(*q) == 'L')
		return dom_last(p, s);
	/* Quartz reads a lone L here as Saturday, in its own numbering: ask for the day. */
	if (p->field == F_DOW && up(*q) == 'L' && is_end(q[1]))
		return fail_at(p, at, "needs a weekday (5L is the last Friday)");
	if (*q == '*') {
		lo = f->min;
		hi = f->max;
		ranged = 1;
		q++;
	} else {
		if (value(p, &q, &lo) != 0 || in_range(p, at, q, lo) != 0)
			return CB_EINVAL;
		hi = lo;
		if (*q == '-') {
			const char *hat = ++q;

			if (is_end(*q))
				return fail_at(p, at, "has no end of range");
			if (value(p, &q, &hi) != 0 || in_range(p, hat, q, hi) != 0)
				return CB_EINVAL;
			if (hi < lo)
				return cb_error_set(p->err, CB_EINVAL,
						    "%s field: range %.*s at character "
						    "%d is reversed",
						    f->name, (int)(q - at), at, position(p, at));
			ranged = 1;
		} else if (p->field == F_DOM && up(*q) == 'W') {
			if (!is_end(q[1]))
				return fail_at(p, at, "is not nW");
			p->c->dom_nearw |= (uint32_t)1 << lo;
			*s = q + 1;
			return 0;
		} else if (p->field == F_DOW && up(*q) == 'L') {
			if (!is_end(q[1]))
				return fail_at(p, at, "is not dL");
			p->c->dow_last |= (uint8_t)(1u << (lo % 7));
			*s = q + 1;
			return 0;
		} else if (p->field == F_DOW && *q == '#') {
			const char *kat = q++;
			int k;

			if (!is_digit(*q))
				return fail_at(p, at, "is not d#k");
			value(p, &q, &k);
			if (k < 1 || k > 5)
				return cb_error_set(p->err, CB_EINVAL,
						    "day-of-week field: #%d at character "
						    "%d is out of range 1-5",
						    k, position(p, kat));
			if (!is_end(*q))
				return fail_at(p, at, "is not d#k");
			p->c->dow_nth[lo % 7] |= (uint8_t)(1u << (k - 1));
			*s = q;
			return 0;
		}
	}
	if (*q == '/') {
		const char *sat = ++q;

		if (!is_digit(*q))
			return fail_at(p, at, "has no step after '/'");
		value(p, &q, &step);
		if (step < 1 || step > f->max - f->min + 1)
			return cb_error_set(p->err, CB_EINVAL,
					    "%s field: step %d at character %d is "
					    "out of range 1-%d",
					    f->name, step, position(p, sat), f->max - f->min + 1);
		/* "a/n" runs from a to the end of the field, as in Quartz. */
		if (!ranged)
			hi = f->max;
	}
	if (!is_end(*q))
		return fail_at(p, at, "has unexpected text");
	set_range(p, lo, hi, step);
	*s = q;
	return 0;
}

/* One whole field at *s (a blank-free word): *s moves past it. */
static int field(struct parser *p, const char **s)
{
	const char *q = *s;
	int day = p->field == F_DOM || p->field == F_DOW;

	/* Vixie cron's test for its DST rule is on the text too (cb_cron_is_fixed_time). */
	if ((p->field == F_MIN || p->field == F_HOUR) && *q == '*')
		p->c->time_star = 1;
	if (day && (*q == '*' || *q == '?')) {
		if (p->field == F_DOM)
			p->c->dom_star = 1;
		else
			p->c->dow_star = 1;
	}
	if (*q == '?') {
		if (!day)
			return fail_at(p, q, "is only allowed in day-of-month and day-of-week");
		if (!is_blank(q[1]) && q[1] != '\0')
			return fail_at(p, q, "must be the whole field");
		p->c->bits[p->field] = ~(uint64_t)0;
		*s = q + 1;
		return 0;
	}
	for (;;) {
		if (element(p, &q) != 0)
			return CB_EINVAL;
		if (*q != ',')
			break;
		q++;
	}
	*s = q;
	return 0;
}

static int count_fields(const char *s)
{
	int n = 0;

	while (*s) {
		while (is_blank(*s))
			s++;
		if (!*s)
			break;
		n++;
		while (*s && !is_blank(*s))
			s++;
	}
	return n;
}

/* Every parse error starts with the expression, cut if long, so that the field part survives. */
static int parse_failed(const char *expr, cb_error *err, int code)
{
	int len = (int)strlen(expr);

	cb_error_prefix(err, "cron \"%.*s%s\"", len > 80 ? 77 : len, expr, len > 80 ? "..." : "");
	return code;
}

int cb_cron_parse(cb_cron **out, const char *expr, cb_error *err)
{
	struct parser p = { expr, expr, err, NULL, 0 };
	const char *s;
	int n;

	if (!out || !expr)
		return cb_error_set(err, CB_EINVAL, "cron: no expression");
	if (strlen(expr) > CB_CRON_EXPR_MAX)
		return parse_failed(
			expr, err,
			cb_error_set(err, CB_EINVAL, "longer than %d bytes", CB_CRON_EXPR_MAX));
	/* Control bytes and non-ASCII first: no message should carry them raw. */
	for (const char *t = expr; *t; t++)
		if ((unsigned char)*t < 0x20 ? !is_blank(*t) : (unsigned char)*t >= 0x7f)
			return parse_failed(expr, err,
					    cb_error_set(err, CB_EINVAL,
							 "unexpected byte 0x%02x at character %d",
							 (unsigned char)*t, (int)(t - expr) + 1));
	s = expr;
	while (is_blank(*s))
		s++;
	if (*s == '@') {
		size_t len = strcspn(s, " \t");
		size_t i;

		for (i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
			if (strlen(macros[i].name) == len &&
			    strncasecmp(s, macros[i].name, len) == 0)
				break;
		if (i < sizeof(macros) / sizeof(macros[0]) && s[len + strspn(s + len, " \t")])
			return parse_failed(
				expr, err,
				cb_error_set(err, CB_EINVAL, "text after %s at character %d",
					     macros[i].name,
					     (int)(s + len + strspn(s + len, " \t") - expr) + 1));
		if (i == sizeof(macros) / sizeof(macros[0]))
			return parse_failed(
				expr, err,
				cb_error_set(err, CB_EINVAL,
					     "unknown macro \"%.*s\" at character %d "
					     "(@yearly, @annually, @monthly, @weekly, @daily, "
					     "@midnight, @hourly)",
					     (int)(len > 40 ? 40 : len), s, (int)(s - expr) + 1));
		p.text = macros[i].expansion;
	}
	n = count_fields(p.text);
	if (n != 5 && n != 6)
		return parse_failed(expr, err,
				    cb_error_set(err, CB_EINVAL,
						 "%d fields, expected 5 (minute hour day-of-month "
						 "month day-of-week) or 6 (second first)",
						 n));
	p.c = calloc(1, sizeof(*p.c));
	if (!p.c)
		return cb_error_set(err, CB_ENOMEM, "cron: out of memory");
	p.c->has_seconds = n == 6;
	if (n == 5)
		p.c->bits[F_SEC] = 1; /* second 0 */
	s = p.text;
	for (p.field = n == 6 ? F_SEC : F_MIN; p.field < F_COUNT; p.field++) {
		while (is_blank(*s))
			s++;
		if (field(&p, &s) != 0) {
			cb_cron_free(p.c);
			return parse_failed(expr, err, CB_EINVAL);
		}
	}
	*out = p.c;
	return 0;
}

void cb_cron_free(cb_cron *c)
{
	free(c);
}

int cb_cron_has_seconds(const cb_cron *c)
{
	return c ? c->has_seconds : 0;
}

int cb_cron_is_fixed_time(const cb_cron *c)
{
	return c ? !c->time_star : 0;
}

/* ---- the calendar ------------------------------------------------------- */

/* The calendar itself is core/calendar.c, shared with the time zone code. */
static int days_in_month(int y, int m)
{
	return cb__days_in_month(y, m);
}

/* 0 = Sunday. */
static int weekday(int y, int m, int d)
{
	return cb__weekday(cb__days_from_civil(y, m, d));
}

/* The day (1-31) a weekday-nearest rule picks for day n of a month of len days. */
static int nearest_weekday(int n, int len, int wd_of_n)
{
	if (wd_of_n == 6) /* Saturday: the Friday before, or Monday if n is the 1st */
		return n == 1 ? n + 2 : n - 1;
	if (wd_of_n == 0) /* Sunday: the Monday after, or Friday if that leaves the month */
		return n == len ? n - 2 : n + 1;
	return n;
}

/* The days of month m of year y that match, as bit d for day d. */
static uint32_t month_days(const cb_cron *c, int y, int m)
{
	int len = days_in_month(y, m), wd1 = weekday(y, m, 1);
	uint32_t valid = (uint32_t)(((uint64_t)1 << (len + 1)) - 2);
	uint32_t dom = (uint32_t)c->bits[F_DOM] & valid, dow = 0;

	for (int n = 0; n <= 30; n++)
		if ((c->dom_last >> n & 1) && len - n >= 1)
			dom |= (uint32_t)1 << (len - n);
	if (c->dom_lastw) {
		int wd = (wd1 + len - 1) % 7;

		dom |= (uint32_t)1 << (wd == 6 ? len - 1 : wd == 0 ? len - 2 : len);
	}
	for (int n = 1; n <= len; n++)
		if (c->dom_nearw >> n & 1)
			dom |= (uint32_t)1 << nearest_weekday(n, len, (wd1 + n - 1) % 7);
	for (int d = 1; d <= len; d++) {
		int wd = (wd1 + d - 1) % 7;

		if ((c->bits[F_DOW] >> wd & 1) || ((c->dow_last >> wd & 1) && d + 7 > len) ||
		    (c->dow_nth[wd] >> ((d - 1) / 7) & 1))
			dow |= (uint32_t)1 << d;
	}
	/*
	 * Vixie cron's rule, on its own terms: an unrestricted field's set is
	 * intersected (a plain '*' is all days, so the other field decides; a
	 * stepped one still restricts), two restricted fields are united.
	 */
	if (c->dom_star || c->dow_star)
		return dom & dow;
	return dom | dow;
}

/* The lowest set bit of @p bits at or above @p from, or -1. */
static int next_bit(uint64_t bits, int from)
{
	if (from > 63)
		return -1;
	bits &= ~(uint64_t)0 << from;
	return bits ? __builtin_ctzll(bits) : -1;
}

/* The first matching time of day at or after h:m:s into @p out; 0 if none. */
static int time_of_day(const cb_cron *c, int h, int m, int s, cb_civil *out)
{
	for (int hh = next_bit(c->bits[F_HOUR], h); hh >= 0;
	     hh = next_bit(c->bits[F_HOUR], hh + 1)) {
		int m0 = hh == h ? m : 0;

		for (int mm = next_bit(c->bits[F_MIN], m0); mm >= 0;
		     mm = next_bit(c->bits[F_MIN], mm + 1)) {
			int ss = next_bit(c->bits[F_SEC], hh == h && mm == m ? s : 0);

			if (ss >= 0) {
				out->hour = hh;
				out->minute = mm;
				out->second = ss;
				return 1;
			}
		}
	}
	return 0;
}

static int valid_civil(const cb_civil *t)
{
	return t->year >= 1 && t->year <= 9999 && t->month >= 1 && t->month <= 12 && t->day >= 1 &&
	       t->day <= days_in_month(t->year, t->month) && t->hour >= 0 && t->hour <= 23 &&
	       t->minute >= 0 && t->minute <= 59 && t->second >= 0 && t->second <= 59;
}

int cb_cron_next(const cb_cron *c, const cb_civil *after, cb_civil *out, cb_error *err)
{
	cb_civil from;
	int y, m;

	if (!c || !after || !out)
		return cb_error_set(err, CB_EINVAL, "cron: no expression or time");
	if (!valid_civil(after))
		return cb_error_set(err, CB_EINVAL,
				    "cron: %04d-%02d-%02d %02d:%02d:%02d is not a valid civil time "
				    "(years 1-9999)",
				    after->year, after->month, after->day, after->hour,
				    after->minute, after->second);
	/* Strictly after: start one second later, carrying as far as it goes. */
	from = *after;
	if (++from.second == 60) {
		from.second = 0;
		if (++from.minute == 60) {
			from.minute = 0;
			if (++from.hour == 24) {
				from.hour = 0;
				if (++from.day > days_in_month(from.year, from.month)) {
					from.day = 1;
					if (++from.month == 13) {
						from.month = 1;
						from.year++;
					}
				}
			}
		}
	}
	y = from.year;
	m = from.month;
	for (int i = 0; i <= 400 * 12 && y <= 9999; i++) {
		if (c->bits[F_MON] >> m & 1) {
			int first = y == from.year && m == from.month;
			uint32_t days = month_days(c, y, m);

			for (int d = next_bit(days, first ? from.day : 1); d >= 0;
			     d = next_bit(days, d + 1)) {
				int today = first && d == from.day;
				cb_civil t = { y, m, d, 0, 0, 0 };

				if (time_of_day(c, today ? from.hour : 0, today ? from.minute : 0,
						today ? from.second : 0, &t)) {
					*out = t;
					return 0;
				}
			}
		}
		if (++m == 13) {
			m = 1;
			y++;
		}
	}
	return cb_error_set(err, CB_ENOTFOUND,
			    "cron: no time after %04d-%02d-%02d %02d:%02d:%02d matches within %s",
			    after->year, after->month, after->day, after->hour, after->minute,
			    after->second, y > 9999 ? "the years 1-9999" : "400 years");
}
