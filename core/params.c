/*
 * Typed job parameters, their command-line syntax and the job key.
 *
 * A set is a growable array of entries kept in insertion order. Every value is
 * validated on the way in and stored in its canonical text form, so reading it
 * back, writing it to the repository and hashing it all see the same bytes.
 * Doubles are parsed and printed in the "C" locale of the calling thread only
 * (uselocale), so a program that set a locale with a decimal comma still gets
 * the same job key.
 */
#include "cbatch/lock.h"
#include "cbatch/params.h"
#include "cbatch/partition.h"
#include "reserved.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#define KEY_PREFIX "cbatch-job-key:1\n"
#define SYNTAX     "expected [-]NAME[:TYPE]=VALUE"
/* How much of an argument or value an error message quotes. */
#define SHOW_MAX 80

struct entry {
	char *name;
	char *value; /* canonical text form */
	cb_param_type type;
	int identifying;
};

struct cb_params {
	struct entry *v;
	size_t n;
	size_t cap;
};

static const char *const type_names[] = { "string", "long", "double", "date" };

static int type_ok(cb_param_type type)
{
	return (int)type >= 0 && (size_t)type < sizeof(type_names) / sizeof(type_names[0]);
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 if the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (avail < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

/* Offset of the first byte that is not valid UTF-8, or len if all are. */
static size_t utf8_check(const char *s, size_t len)
{
	size_t i = 0, k;

	while (i < len) {
		k = utf8_seq((const unsigned char *)s + i, len - i);
		if (k == 0)
			return i;
		i += k;
	}
	return len;
}

/*
 * Copy s[0..len) into dst for quoting in an error message: valid UTF-8 as is,
 * control characters and invalid bytes as \xHH, cut with "..." past SHOW_MAX.
 */
static void show(char dst[SHOW_MAX + 8], const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, k;

	while (i < len) {
		k = utf8_seq(u + i, len - i);
		if (k == 0 || u[i] < 0x20 || u[i] == 0x7F) {
			if (o + 4 > SHOW_MAX)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[u[i] >> 4];
			dst[o++] = hex[u[i] & 0xF];
			i++;
			continue;
		}
		if (o + k > SHOW_MAX)
			break;
		memcpy(dst + o, s + i, k);
		o += k;
		i += k;
	}
	if (i < len) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
}

/* Describe a byte for a message: 'c' if printable ASCII, else 0xHH. */
static void show_char(char dst[8], unsigned char c)
{
	if (c >= 0x20 && c < 0x7F)
		snprintf(dst, 8, "'%c'", c);
	else
		snprintf(dst, 8, "0x%02X", c);
}

/* Name rules from params.h; `what` is the quoted argument, `base` the offset
 * of the name within it. */
static int check_name(const char *name, size_t len, const char *what, size_t base, cb_error *err)
{
	char c[8];
	size_t i;

	if (len == 0)
		return cb_error_set(err, CB_EINVAL, "parameter '%s': empty name (%s)", what,
				    SYNTAX);
	if (len > CB_PARAM_NAME_MAX)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': name is %zu characters long (at most %d)",
				    what, len, CB_PARAM_NAME_MAX);
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		int alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
		int other = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';

		if (alpha || (i > 0 && other))
			continue;
		show_char(c, ch);
		if (i == 0 && other)
			return cb_error_set(err, CB_EINVAL,
					    "parameter '%s': name starts with %s at offset %zu "
					    "(must start with a letter or '_')",
					    what, c, base);
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid character %s at offset %zu in name "
				    "(allowed: A-Z a-z 0-9 _ . -)",
				    what, c, base + i);
	}
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

static int check_date(const char *v, const char *what, cb_error *err)
{
	char sv[SHOW_MAX + 8];
	int y, m, d, i;

	show(sv, v, strlen(v));
	for (i = 0; i < 10; i++) {
		int dash = i == 4 || i == 7;

		if (dash ? v[i] != '-' : !(v[i] >= '0' && v[i] <= '9'))
			break;
	}
	if (i < 10 || v[10] != '\0')
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid date '%s' (expected YYYY-MM-DD)", what,
				    sv);
	y = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 + (v[3] - '0');
	m = (v[5] - '0') * 10 + (v[6] - '0');
	d = (v[8] - '0') * 10 + (v[9] - '0');
	if (y < 1)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid date '%s' (year must be 0001-9999)",
				    what, sv);
	if (m < 1 || m > 12)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid date '%s' (month must be 01-12)", what,
				    sv);
	if (d < 1 || d > days_in_month(y, m))
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid date '%s' (%.7s has %d days)", what,
				    sv, v, days_in_month(y, m));
	return 0;
}

static int check_string(const char *v, size_t len, const char *what, cb_error *err)
{
	size_t bad = utf8_check(v, len);

	if (bad < len)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid UTF-8 at byte %zu of the value "
				    "(byte 0x%02X)",
				    what, bad, (unsigned char)v[bad]);
	return 0;
}

static int canon_long(char *out, size_t cap, const char *v, const char *what, cb_error *err)
{
	char sv[SHOW_MAX + 8];
	long long x;
	char *end;

	show(sv, v, strlen(v));
	/* strtoll would skip leading white space; a value never has any. */
	if (!((v[0] >= '0' && v[0] <= '9') ||
	      ((v[0] == '-' || v[0] == '+') && v[1] >= '0' && v[1] <= '9')))
		return cb_error_set(
			err, CB_EINVAL,
			"parameter '%s': invalid long '%s' (expected a decimal integer)", what, sv);
	errno = 0;
	x = strtoll(v, &end, 10);
	if (*end != '\0')
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid long '%s' (unexpected character at "
				    "offset %zu of the value)",
				    what, sv, (size_t)(end - v));
	if (errno == ERANGE)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': long '%s' out of range (%lld..%lld)", what, sv,
				    LLONG_MIN, LLONG_MAX);
	snprintf(out, cap, "%lld", x);
	return 0;
}

/*
 * Format a finite double as "%.17g" in the C locale (-0 as 0). With text != NULL
 * the value is first parsed from text, also in the C locale.
 */
static int canon_double(char *out, size_t cap, double x, const char *text, const char *what,
			cb_error *err)
{
	char sv[SHOW_MAX + 8];
	locale_t c, old;
	char *end = NULL;
	int bad = 0, range = 0;

	c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c == (locale_t)0)
		return cb_error_set(err, CB_ENOMEM, "parameter '%s': out of memory", what);
	old = uselocale(c);
	if (text) {
		/* strtod would skip leading white space; a value never has any. */
		if (text[0] == '\0' || text[0] == ' ' || (text[0] >= '\t' && text[0] <= '\r'))
			bad = 1;
		else {
			errno = 0;
			x = strtod(text, &end);
			/* Underflow (1e-400 as 0, or a subnormal) and overflow. */
			range = errno == ERANGE;
		}
		if (!bad && *end != '\0')
			bad = 1;
	}
	if (!bad && isfinite(x)) {
		if (x == 0)
			x = 0; /* drops the sign of -0 */
		snprintf(out, cap, "%.17g", x);
	}
	uselocale(old);
	freelocale(c);

	if (text)
		show(sv, text, strlen(text));
	if (bad)
		return cb_error_set(
			err, CB_EINVAL,
			"parameter '%s': invalid double '%s' (expected a decimal number)", what,
			sv);
	/* Subnormals are kept (they round-trip); a value that became 0 is refused. */
	if (range && x == 0)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid double '%s' (out of range: it "
				    "underflows to 0; the smallest magnitude is %g)",
				    what, sv, DBL_TRUE_MIN);
	if (!isfinite(x)) {
		if (!text)
			return cb_error_set(err, CB_EINVAL,
					    "parameter '%s': double value is %s (must be finite)",
					    what, isnan(x) ? "nan" : "infinite");
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': invalid double '%s' (%s; must be finite)",
				    what, sv, isnan(x) ? "nan" : "infinite or out of range");
	}
	return 0;
}

static struct entry *find(const cb_params *p, const char *name)
{
	size_t i;

	if (!p || !name)
		return NULL;
	for (i = 0; i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return &p->v[i];
	return NULL;
}

/*
 * Validate and append. `name` is `namelen` bytes, not necessarily terminated;
 * `what` is the text that error messages quote and `base` the offset of the
 * name within it.
 */
static int add(cb_params *p, const char *name, size_t namelen, cb_param_type type,
	       const char *value, int identifying, const char *what, size_t base, cb_error *err)
{
	char buf[32]; /* a canonical long, double or date */
	const char *canon = value;
	size_t vlen = strlen(value);
	struct entry e;
	size_t i;
	int rc;

	if ((rc = check_name(name, namelen, what, base, err)) != 0)
		return rc;
	if (!type_ok(type))
		return cb_error_set(err, CB_EINVAL, "parameter '%s': unknown type %d", what,
				    (int)type);
	if (vlen > CB_PARAM_VALUE_MAX)
		return cb_error_set(err, CB_EINVAL,
				    "parameter '%s': value is %zu bytes long (at most %d)", what,
				    vlen, CB_PARAM_VALUE_MAX);
	switch (type) {
	case CB_PARAM_STRING:
		rc = check_string(value, vlen, what, err);
		break;
	case CB_PARAM_LONG:
		rc = canon_long(buf, sizeof(buf), value, what, err);
		canon = buf;
		break;
	case CB_PARAM_DOUBLE:
		rc = canon_double(buf, sizeof(buf), 0, value, what, err);
		canon = buf;
		break;
	case CB_PARAM_DATE:
		rc = check_date(value, what, err);
		break;
	}
	if (rc != 0)
		return rc;
	for (i = 0; i < p->n; i++)
		if (strlen(p->v[i].name) == namelen && memcmp(p->v[i].name, name, namelen) == 0)
			return cb_error_set(err, CB_EINVAL, "parameter '%s': duplicate name '%.*s'",
					    what, (int)namelen, name);

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		struct entry *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return cb_error_set(err, CB_ENOMEM, "parameter '%s': out of memory", what);
		p->v = v;
		p->cap = cap;
	}
	e.name = malloc(namelen + 1);
	e.value = strdup(canon);
	if (!e.name || !e.value) {
		free(e.name);
		free(e.value);
		return cb_error_set(err, CB_ENOMEM, "parameter '%s': out of memory", what);
	}
	memcpy(e.name, name, namelen);
	e.name[namelen] = '\0';
	e.type = type;
	e.identifying = identifying ? 1 : 0;
	p->v[p->n++] = e;
	return 0;
}

int cb_params_new(cb_params **out, cb_error *err)
{
	cb_params *p;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_params_new: out is NULL");
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return cb_error_set(err, CB_ENOMEM, "parameters: out of memory");
	*out = p;
	return 0;
}

void cb_params_free(cb_params *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].value);
	}
	free(p->v);
	free(p);
}

int cb_params_dup(cb_params **out, const cb_params *p, cb_error *err)
{
	cb_params *d;
	size_t i;

	if (!out || !p)
		return cb_error_set(err, CB_EINVAL, "cb_params_dup: %s is NULL",
				    out ? "source" : "out");
	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return cb_error_set(err, CB_ENOMEM, "parameters: out of memory");
	if (p->n > 0) {
		d->v = calloc(p->n, sizeof(*d->v));
		if (!d->v) {
			free(d);
			return cb_error_set(err, CB_ENOMEM, "parameters: out of memory");
		}
		d->cap = p->n;
	}
	for (i = 0; i < p->n; i++) {
		struct entry *e = &d->v[i];

		e->name = strdup(p->v[i].name);
		e->value = strdup(p->v[i].value);
		e->type = p->v[i].type;
		e->identifying = p->v[i].identifying;
		d->n = i + 1; /* so cb_params_free releases what was copied */
		if (!e->name || !e->value) {
			cb_params_free(d);
			return cb_error_set(err, CB_ENOMEM, "parameters: out of memory");
		}
	}
	*out = d;
	return 0;
}

int cb_params_add(cb_params *p, const char *name, cb_param_type type, const char *value,
		  int identifying, cb_error *err)
{
	char sn[SHOW_MAX + 8];

	if (!p || !name || !value)
		return cb_error_set(err, CB_EINVAL, "cb_params_add: %s is NULL",
				    !p    ? "set" :
				    !name ? "name" :
					    "value");
	show(sn, name, strlen(name));
	return add(p, name, strlen(name), type, value, identifying, sn, 0, err);
}

int cb_params_add_string(cb_params *p, const char *name, const char *value, int identifying,
			 cb_error *err)
{
	return cb_params_add(p, name, CB_PARAM_STRING, value, identifying, err);
}

int cb_params_add_long(cb_params *p, const char *name, long long value, int identifying,
		       cb_error *err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", value);
	return cb_params_add(p, name, CB_PARAM_LONG, buf, identifying, err);
}

int cb_params_add_double(cb_params *p, const char *name, double value, int identifying,
			 cb_error *err)
{
	char sn[SHOW_MAX + 8];
	char buf[32];
	int rc;

	if (!p || !name)
		return cb_error_set(err, CB_EINVAL, "cb_params_add_double: %s is NULL",
				    !p ? "set" : "name");
	show(sn, name, strlen(name));
	if ((rc = check_name(name, strlen(name), sn, 0, err)) != 0)
		return rc;
	if ((rc = canon_double(buf, sizeof(buf), value, NULL, sn, err)) != 0)
		return rc;
	return add(p, name, strlen(name), CB_PARAM_DOUBLE, buf, identifying, sn, 0, err);
}

int cb_params_parse_arg(cb_params *p, const char *arg, cb_error *err)
{
	char sa[SHOW_MAX + 8];
	char st[SHOW_MAX + 8];
	const char *name, *eq, *colon;
	cb_param_type type = CB_PARAM_STRING;
	int identifying = 1;
	size_t namelen;

	if (!p || !arg)
		return cb_error_set(err, CB_EINVAL, "cb_params_parse_arg: %s is NULL",
				    !p ? "set" : "argument");
	show(sa, arg, strlen(arg));
	name = arg;
	if (*name == '-') {
		identifying = 0;
		name++;
	}
	eq = strchr(name, '=');
	if (!eq)
		return cb_error_set(err, CB_EINVAL, "parameter '%s': missing '=' (%s)", sa, SYNTAX);
	colon = memchr(name, ':', (size_t)(eq - name));
	namelen = (size_t)((colon ? colon : eq) - name);
	if (colon) {
		size_t tlen = (size_t)(eq - colon - 1);
		size_t i;

		for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
			if (strlen(type_names[i]) == tlen &&
			    memcmp(type_names[i], colon + 1, tlen) == 0)
				break;
		if (i == sizeof(type_names) / sizeof(type_names[0])) {
			int rc = check_name(name, namelen, sa, (size_t)(name - arg), err);

			if (rc != 0)
				return rc;
			show(st, colon + 1, tlen);
			return cb_error_set(err, CB_EINVAL,
					    "parameter '%s': unknown type '%s' at offset %zu "
					    "(expected string, long, double or date)",
					    sa, st, (size_t)(colon + 1 - arg));
		}
		type = (cb_param_type)i;
	}
	return add(p, name, namelen, type, eq + 1, identifying, sa, (size_t)(name - arg), err);
}

size_t cb_params_count(const cb_params *p)
{
	return p ? p->n : 0;
}

static void fill(const struct entry *e, const char **name, cb_param_type *type, const char **value,
		 int *identifying)
{
	if (name)
		*name = e->name;
	if (type)
		*type = e->type;
	if (value)
		*value = e->value;
	if (identifying)
		*identifying = e->identifying;
}

int cb_params_at(const cb_params *p, size_t i, const char **name, cb_param_type *type,
		 const char **value, int *identifying)
{
	if (!p || i >= p->n)
		return CB_ENOTFOUND;
	fill(&p->v[i], name, type, value, identifying);
	return 0;
}

int cb_params_find(const cb_params *p, const char *name, cb_param_type *type, const char **value,
		   int *identifying)
{
	const struct entry *e = find(p, name);

	if (!e)
		return CB_ENOTFOUND;
	fill(e, NULL, type, value, identifying);
	return 0;
}

const char *cb_params_get(const cb_params *p, const char *name)
{
	const struct entry *e = find(p, name);

	return e ? e->value : NULL;
}

int cb_params_get_long(const cb_params *p, const char *name, long long *out)
{
	const struct entry *e = find(p, name);

	if (!e)
		return CB_ENOTFOUND;
	if (e->type != CB_PARAM_LONG)
		return CB_EINVAL;
	if (out)
		*out = strtoll(e->value, NULL, 10); /* canonical, so always valid */
	return 0;
}

int cb_params_remove(cb_params *p, const char *name)
{
	struct entry *e = find(p, name);
	size_t i;

	if (!e)
		return CB_ENOTFOUND;
	i = (size_t)(e - p->v);
	free(e->name);
	free(e->value);
	memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof(p->v[0]));
	p->n--;
	return 0;
}

int cb_params_set_identifying(cb_params *p, const char *name, int identifying)
{
	struct entry *e = find(p, name);

	if (!e)
		return CB_ENOTFOUND;
	e->identifying = identifying != 0;
	return 0;
}

int cb_param_type_parse(cb_param_type *out, const char *name)
{
	size_t i;

	if (!name)
		return CB_EINVAL;
	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(type_names[i], name) == 0) {
			if (out)
				*out = (cb_param_type)i;
			return 0;
		}
	return CB_EINVAL;
}

const char *cb_param_type_name(cb_param_type type)
{
	return type_ok(type) ? type_names[type] : NULL;
}

static int by_name(const void *a, const void *b)
{
	const struct entry *const *x = a;
	const struct entry *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* Append "<len>:<bytes>;" at *o; returns the bytes it takes (writes if buf). */
static size_t field(char *buf, size_t o, const char *s)
{
	size_t len = strlen(s);
	char num[24];
	int k = snprintf(num, sizeof(num), "%zu", len);

	if (buf) {
		memcpy(buf + o, num, (size_t)k);
		buf[o + (size_t)k] = ':';
		memcpy(buf + o + (size_t)k + 1, s, len);
		buf[o + (size_t)k + 1 + len] = ';';
	}
	return (size_t)k + 1 + len + 1;
}

int cb_params_canonical(char **out, size_t *len, const cb_params *p, cb_error *err)
{
	const struct entry **sorted = NULL;
	size_t n = 0, i, total, o;
	char *buf;

	if (!out || !p)
		return cb_error_set(err, CB_EINVAL, "cb_params_canonical: %s is NULL",
				    out ? "set" : "out");
	*out = NULL;
	if (len)
		*len = 0;
	if (p->n > 0) {
		sorted = malloc(p->n * sizeof(*sorted));
		if (!sorted)
			return cb_error_set(err, CB_ENOMEM, "job key: out of memory");
	}
	for (i = 0; i < p->n; i++)
		if (p->v[i].identifying)
			sorted[n++] = &p->v[i];
	if (n > 1)
		qsort(sorted, n, sizeof(*sorted), by_name);

	/* Two passes over the same code: measure, then write. */
	total = sizeof(KEY_PREFIX) - 1;
	for (i = 0; i < n; i++)
		total += field(NULL, 0, sorted[i]->name) +
			 field(NULL, 0, type_names[sorted[i]->type]) +
			 field(NULL, 0, sorted[i]->value);
	buf = malloc(total + 1);
	if (!buf) {
		free(sorted);
		return cb_error_set(err, CB_ENOMEM, "job key: out of memory");
	}
	memcpy(buf, KEY_PREFIX, sizeof(KEY_PREFIX) - 1);
	o = sizeof(KEY_PREFIX) - 1;
	for (i = 0; i < n; i++) {
		o += field(buf, o, sorted[i]->name);
		o += field(buf, o, type_names[sorted[i]->type]);
		o += field(buf, o, sorted[i]->value);
	}
	buf[o] = '\0';
	free(sorted);
	*out = buf;
	if (len)
		*len = o;
	return 0;
}

int cb_params_job_key(char *out, const cb_params *p, cb_error *err)
{
	static const char hex[] = "0123456789abcdef";
	XXH128_canonical_t c;
	char *buf;
	size_t len, i;
	int rc;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_params_job_key: out is NULL");
	if ((rc = cb_params_canonical(&buf, &len, p, err)) != 0)
		return rc;
	XXH128_canonicalFromHash(&c, XXH3_128bits(buf, len));
	free(buf);
	for (i = 0; i < sizeof(c.digest); i++) {
		out[2 * i] = hex[c.digest[i] >> 4];
		out[2 * i + 1] = hex[c.digest[i] & 0xF];
	}
	out[CB_JOB_KEY_LEN] = '\0';
	return 0;
}

/* ---- reserved parameters ------------------------------------------------- */

/* Keep in sync with docs/running-jobs.md ("Parameters") and the readers: step_chunk.c,
 * partition.c. The bounds are what those readers can honour. */
/* One parameter a line. */
// clang-format off
static const cb__reserved_param reserved[] = {
	{ "chunk.size", 1, 1000000 },
	{ "chunk.connections", 1, 2 },
	{ "skip.limit", 0, 1000000000LL },
	{ "partition.count", 1, CB_MAX_PARTITIONS },
	{ "partition.threads", 0, 256 },
	{ "outage.budget", 0, 86400 },
};
// clang-format on
#define NRESERVED (sizeof(reserved) / sizeof(reserved[0]))

const cb__reserved_param *cb__reserved_find(const char *name)
{
	for (size_t i = 0; name && i < NRESERVED; i++)
		if (strcmp(reserved[i].name, name) == 0)
			return &reserved[i];
	return NULL;
}

static int reserved_bad(const cb__reserved_param *r, const struct entry *e, cb_error *err)
{
	char shown[SHOW_MAX + 8];

	show(shown, e->value, strlen(e->value));
	return cb_error_set(err, CB_EINVAL,
			    "invalid parameter %s:%s=%s: %s must be a long from %lld to %lld",
			    r->name, type_names[e->type], shown, r->name, r->min, r->max);
}

static int reserved_entry(const struct entry *e, cb_error *err)
{
	static const char *const prefixes[] = { CB__RESERVED_PREFIXES };
	const cb__reserved_param *r = cb__reserved_find(e->name);
	long long n;

	if (!r) {
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			if (strncmp(e->name, prefixes[i], strlen(prefixes[i])) != 0)
				continue;
			return cb_error_set(err, CB_EINVAL,
					    "unknown parameter '%s': names starting with '%s' "
					    "are reserved for cbatch (%s, %s, %s, %s, %s)",
					    e->name, prefixes[i], reserved[0].name,
					    reserved[1].name, reserved[2].name, reserved[3].name,
					    reserved[4].name);
		}
		return 0;
	}
	if (e->type != CB_PARAM_LONG)
		return reserved_bad(r, e, err);
	n = strtoll(e->value, NULL, 10); /* canonical, so always valid */
	if (n < r->min || n > r->max)
		return reserved_bad(r, e, err);
	return 0;
}

int cb__reserved_check(const cb_params *p, cb_error *err)
{
	int rc;

	for (size_t i = 0; p && i < p->n; i++)
		if ((rc = reserved_entry(&p->v[i], err)) < 0)
			return rc;
	return 0;
}

double cb__outage_budget(const cb_params *p, double lease_seconds)
{
	long long n = -1;
	cb_error ignored = CB_ERROR_INIT;

	if (p && cb__reserved_long(&n, p, "outage.budget", -1, &ignored) == 0 && n >= 0)
		return (double)n;
	return lease_seconds > 0 ? lease_seconds : CB_DEFAULT_LEASE_SECONDS;
}

int cb__reserved_long(long long *out, const cb_params *p, const char *name, long long dflt,
		      cb_error *err)
{
	const cb__reserved_param *r = cb__reserved_find(name);
	const struct entry *e = p ? find(p, name) : NULL;
	int rc;

	*out = dflt;
	if (!r)
		return cb_error_set(err, CB_EINVAL, "'%s' is not a reserved parameter", name);
	if (!e)
		return 0;
	if ((rc = reserved_entry(e, err)) < 0)
		return rc;
	*out = strtoll(e->value, NULL, 10);
	return 0;
}
