/* The CLI's output: aligned tables, timestamps and durations, JSON. */
#include "cli_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text.h"

/* ---- tables -------------------------------------------------------------- */

struct cb__cli_table {
	size_t ncols;
	char *align;  /* 'l' or 'r' per column */
	char **cells; /* row-major; the first row is the header */
	size_t nrows, cap;
};

static int table_push(cb__cli_table *t, const char *const *cells)
{
	size_t i, base;

	if (t->nrows == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 16;
		char **p = realloc(t->cells, ncap * t->ncols * sizeof(*p));

		if (!p)
			return CB_ENOMEM;
		t->cells = p;
		t->cap = ncap;
	}
	base = t->nrows * t->ncols;
	for (i = 0; i < t->ncols; i++) {
		const char *c = cells[i] ? cells[i] : "-";
		/* Escaped: a value must not break the row or move the cursor. */
		size_t size = strlen(c) * 6 + 1;

		t->cells[base + i] = malloc(size);
		if (t->cells[base + i])
			cb__term_escape(t->cells[base + i], size, c);
		if (!t->cells[base + i]) {
			while (i-- > 0)
				free(t->cells[base + i]);
			return CB_ENOMEM;
		}
	}
	t->nrows++;
	return 0;
}

int cb__cli_table_new(cb__cli_table **out, size_t ncols, const char *const *headers,
		      const char *align)
{
	cb__cli_table *t;
	size_t i;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return CB_ENOMEM;
	t->ncols = ncols;
	t->align = malloc(ncols);
	if (!t->align) {
		free(t);
		return CB_ENOMEM;
	}
	for (i = 0; i < ncols; i++)
		t->align[i] = align && align[i] == 'r' ? 'r' : 'l';
	if (table_push(t, headers) < 0) {
		cb__cli_table_free(t);
		return CB_ENOMEM;
	}
	*out = t;
	return 0;
}

int cb__cli_table_add(cb__cli_table *t, const char *const *cells)
{
	return table_push(t, cells);
}

/* Columns on a terminal: count code points, not bytes (names may be UTF-8). */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

static void pad(FILE *f, size_t n)
{
	while (n-- > 0)
		fputc(' ', f);
}

void cb__cli_table_print(const cb__cli_table *t, FILE *f, const char *indent)
{
	size_t *w, r, c;

	w = calloc(t->ncols, sizeof(*w));
	if (!w)
		return;
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t cw = width(t->cells[r * t->ncols + c]);

			if (cw > w[c])
				w[c] = cw;
		}
	for (r = 0; r < t->nrows; r++) {
		fputs(indent ? indent : "", f);
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t gap = w[c] - width(s);
			int last = c + 1 == t->ncols;

			if (c > 0)
				fputs("  ", f);
			if (t->align[c] == 'r')
				pad(f, gap);
			fputs(s, f);
			if (t->align[c] == 'l' && !last)
				pad(f, gap);
		}
		fputc('\n', f);
	}
	free(w);
}

void cb__cli_table_free(cb__cli_table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->align);
	free(t);
}

const char *cb__cli_term(char *buf, size_t size, const char *s)
{
	cb__term_escape(buf, size, s ? s : "");
	return buf;
}

/* ---- JSON ---------------------------------------------------------------- */

int cb__cli_json_print(FILE *f, const json_t *v)
{
	/* 15 significant digits: a duration of 0.492098 s prints as such, not as
	 * the double's 17-digit 0.49209799999999998. */
	if (!v || json_dumpf(v, f, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) != 0)
		return -1;
	if (fputc('\n', f) == EOF)
		return -1;
	return 0;
}

/* Length of the valid UTF-8 sequence at @p s, or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		n = 2;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		n = 3;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

json_t *cb__cli_json_text(const char *s)
{
	json_t *v;
	char *copy;
	size_t i = 0, n;

	if (!s)
		s = "";
	v = json_string(s);
	if (v)
		return v;
	copy = strdup(s);
	if (!copy)
		return NULL;
	while (copy[i]) {
		n = utf8_seq((const unsigned char *)copy + i);
		if (n == 0) {
			copy[i] = '?';
			n = 1;
		}
		i += n;
	}
	v = json_string(copy);
	free(copy);
	return v;
}

const char *cb__cli_json_get_text(const json_t *obj, const char *key, char *buf, size_t size)
{
	const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;

	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, size, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	else
		return NULL;
	return buf;
}

long long cb__cli_json_get_ll(const json_t *obj, const char *key)
{
	const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;

	if (json_is_integer(v))
		return (long long)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	return 0;
}

/* ---- times --------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

/* Read exactly @p n digits. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	while (n-- > 0) {
		if (**p < '0' || **p > '9')
			return -1;
		v = v * 10 + (*(*p)++ - '0');
	}
	*out = v;
	return 0;
}

int cb__cli_parse_time(double *epoch, int *has_offset, const char *s)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	double frac = 0, scale = 0.1;
	const char *p = s;

	if (!s || digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
	    digits(&p, 2, &d) || (*p != 'T' && *p != ' ') || !*p++ || digits(&p, 2, &h) ||
	    *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 24 || mi > 59 || sec > 60)
		return -1;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			frac += (*p++ - '0') * scale;
			scale /= 10;
		}
	}
	if (*p == 'Z') {
		sign = 1;
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh))
			return -1;
		if (*p == ':')
			p++;
		if (*p >= '0' && *p <= '9' && digits(&p, 2, &om))
			return -1;
		if (*p == ':') { /* seconds in historical offsets: ignored */
			int os;

			p++;
			if (digits(&p, 2, &os))
				return -1;
		}
	}
	if (*p != '\0')
		return -1;
	*epoch = (double)(days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400LL + h * 3600LL +
			  mi * 60LL + sec) +
		 frac - (double)sign * (oh * 3600 + om * 60);
	*has_offset = sign != 0;
	return 0;
}

/*
 * The zone every time is shown in, chosen once per invocation: --utc, else
 * CBATCH_TZ (a zone of the repository's server), else the host's local time.
 * A file static rather than an argument so that every printer, however deep,
 * shows the same zone; cb_cli_main sets it up and ends it. CBATCH_TZ's rules
 * are read over a connection of its own, opened at the first time shown:
 * the command's may be finished by then.
 */
static struct {
	int utc;
	const char *name; /* CBATCH_TZ, or NULL */
	const char *db;   /* the invocation's --db (NULL: CBATCH_DB, PG*) */
	int checked;      /* name is known to the server */
	int failed;       /* its rules could not be had: UTC shown instead */
	PGconn *conn;     /* the zone's own connection */
	cb_zone *zone;
} shown;

void cb__cli_zone_choose(int utc, const char *name)
{
	memset(&shown, 0, sizeof(shown));
	shown.utc = utc;
	shown.name = !utc && name && *name ? name : NULL;
}

int cb__cli_zone_attach(struct cli *c, PGconn *conn)
{
	cb_zone *z = NULL;
	int rc;

	if (!shown.name || shown.checked)
		return 0;
	rc = cb_zone_open(&z, conn, shown.name, 1, &c->err);
	cb_zone_free(z);
	if (rc == CB_EINVAL) {
		char msg[CB_ERROR_MESSAGE_MAX];

		snprintf(msg, sizeof(msg), "%s", c->err.message);
		cb_error_clear(&c->err);
		return cb__cli_usage_error(c,
					   "CBATCH_TZ: %s (give a zone name such as Europe/Berlin, "
					   "or unset it for the local time; --utc for UTC)",
					   msg);
	}
	if (rc < 0)
		return -1; /* the caller's to report, or to wait out (a lost session) */
	shown.checked = 1;
	shown.db = c->db;
	return 0;
}

/*
 * The schedules' own zones, opened once per command by name (and
 * connection): a listing of many schedules then asks the server for a
 * zone's rules once, not once per time it shows (a fresh zone remembers no
 * segment). Past ZONES_KEPT names, a zone is opened for each time again.
 */
#define ZONES_KEPT 32
static struct {
	PGconn *conn; /* borrowed */
	cb_zone *zone;
} zones[ZONES_KEPT];
static int nzones;

/* Zone @p name of @p conn's server: kept (*owned = 0) or the caller's to
 * free (*owned = 1). */
static int zone_get(cb_zone **out, int *owned, PGconn *conn, const char *name, cb_error *e)
{
	int rc;

	*owned = 0;
	for (int i = 0; i < nzones; i++)
		if (zones[i].conn == conn && strcmp(cb_zone_name(zones[i].zone), name) == 0) {
			*out = zones[i].zone;
			return 0;
		}
	if ((rc = cb_zone_open(out, conn, name, 0, e)) < 0)
		return rc;
	if (nzones < ZONES_KEPT) {
		zones[nzones].conn = conn;
		zones[nzones++].zone = *out;
	} else {
		*owned = 1;
	}
	return 0;
}

void cb__cli_zone_end(void)
{
	for (int i = 0; i < nzones; i++)
		cb_zone_free(zones[i].zone);
	memset(zones, 0, sizeof(zones));
	nzones = 0;
	cb_zone_free(shown.zone);
	if (shown.conn)
		PQfinish(shown.conn);
	memset(&shown, 0, sizeof(shown));
}

/* Whole seconds, as people read them: 12:00:00.999 shows 12:00:00. */
static long long whole(double epoch)
{
	long long t = (long long)epoch;

	return (double)t > epoch ? t - 1 : t;
}

/* The offset of the shown zone at @p t; -1 if it cannot be had. */
static int shown_offset(long long t, int *offset)
{
	cb_error e = CB_ERROR_INIT;
	struct tm tm;
	time_t tt = (time_t)t;

	if (shown.utc) {
		*offset = 0;
		return 0;
	}
	if (shown.name) {
		/* Never the host's zone instead of the one asked for. */
		if (!shown.checked || shown.failed)
			return -1;
		if (!shown.zone && (cb_cli_connect(&shown.conn, shown.db, &e) < 0 ||
				    cb_zone_open(&shown.zone, shown.conn, shown.name, 0, &e) < 0)) {
			shown.failed = 1;
			return -1;
		}
		if (cb_zone_offset(shown.zone, t, offset, &e) < 0) {
			shown.failed = 1;
			return -1;
		}
		return 0;
	}
	if (!localtime_r(&tt, &tm))
		return -1;
	*offset = (int)tm.tm_gmtoff;
	return 0;
}

void cb__cli_fmt_instant(char *buf, size_t size, long long t)
{
	int offset;

	/* UTC ("Z") when the zone's rules cannot be had: still the right instant. */
	if (shown_offset(t, &offset) < 0)
		offset = 0;
	cb_time_format(buf, size, t, offset);
}

void cb__cli_fmt_time(char *buf, size_t size, const char *s)
{
	double epoch;
	int off;

	if (!s) {
		snprintf(buf, size, "-");
		return;
	}
	if (cb__cli_parse_time(&epoch, &off, s) < 0) {
		snprintf(buf, size, "%s", s);
		return;
	}
	if (off) {
		cb__cli_fmt_instant(buf, size, whole(epoch));
		return;
	}
	/* No offset (not from the repository, whose times all have one): its
	 * own wall-clock digits, unlike the zoned form, which say no zone. */
	snprintf(buf, size, "%.10s %.8s", s, s + 11);
}

void cb__cli_rfc3339(char *buf, size_t size, const char *s)
{
	double epoch;
	int off;
	size_t n;

	snprintf(buf, size, "%s", s ? s : "");
	if (!s || cb__cli_parse_time(&epoch, &off, s) < 0 || !off || size < 8)
		return;
	buf[10] = 'T';
	/* "+00" -> "+00:00": the offset's minutes are not optional in RFC 3339. */
	n = strlen(buf);
	if (n > 3 && (buf[n - 3] == '+' || buf[n - 3] == '-') && n + 3 < size)
		snprintf(buf + n, size - n, ":00");
}

void cb__cli_fmt_zoned(char *buf, size_t size, PGconn *conn, const char *zone, const char *s)
{
	cb_error e = CB_ERROR_INIT;
	cb_zone *z = NULL;
	double epoch;
	int off, offset, owned = 0;

	if (!s || !zone || cb__cli_parse_time(&epoch, &off, s) < 0 || !off ||
	    zone_get(&z, &owned, conn, zone, &e) < 0 ||
	    cb_zone_offset(z, whole(epoch), &offset, &e) < 0)
		cb__cli_fmt_time(buf, size, s);
	else
		cb_time_format(buf, size, whole(epoch), offset);
	if (owned)
		cb_zone_free(z);
}

void cb__cli_fmt_duration(char *buf, size_t size, double seconds)
{
	long long s;

	if (seconds < 0)
		seconds = 0;
	if (seconds < 60) {
		snprintf(buf, size, "%.2fs", seconds);
		return;
	}
	s = (long long)seconds;
	if (s < 3600)
		snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

void cb__cli_fmt_duration_between(char *buf, size_t size, const char *start, const char *end)
{
	double a, b;
	int oa, ob;

	if (!start || !end || cb__cli_parse_time(&a, &oa, start) < 0 ||
	    cb__cli_parse_time(&b, &ob, end) < 0 || oa != ob) {
		snprintf(buf, size, "-");
		return;
	}
	cb__cli_fmt_duration(buf, size, b - a);
}

/* ---- parameters ---------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	int failed;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 64;
		char *p;

		while (ncap < b->len + n + 1)
			ncap *= 2;
		p = realloc(b->s, ncap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->s = p;
		b->cap = ncap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Characters that need no shell quoting. */
static int shell_safe(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "_-.:=+,/@%",
			    *s))
			return 0;
	return 1;
}

/* Control characters: C0, DEL, C1 (U+0080..U+009F, C2 80..C2 9F). */
static int has_control(const char *s)
{
	for (; *s; s++) {
		const unsigned char u = (unsigned char)*s;

		if (u < 0x20 || u == 0x7F ||
		    (u == 0xC2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] < 0xA0))
			return 1;
	}
	return 0;
}

/* One parameter as the command line would take it, shell-quoted if needed. */
static void add_param(struct sbuf *b, const char *name, const char *type, const char *value,
		      int identifying)
{
	struct sbuf w = { NULL, 0, 0, 0 };
	const char *p;

	if (!identifying)
		sb_str(&w, "-");
	sb_str(&w, name);
	if (type && strcmp(type, "string") != 0) {
		sb_str(&w, ":");
		sb_str(&w, type);
	}
	sb_str(&w, "=");
	sb_str(&w, value ? value : "");
	if (w.failed) {
		b->failed = 1;
		free(w.s);
		return;
	}
	if (b->len > 0)
		sb_str(b, " ");
	if (has_control(w.s)) {
		/* Bash's $'...': the escapes stay copy-pasteable and show no raw
		 * control character (which could forge output lines). */
		sb_str(b, "$'");
		for (p = w.s; *p; p++) {
			const unsigned char u = (unsigned char)*p;
			char e[8];

			if (*p == '\\' || *p == '\'')
				snprintf(e, sizeof(e), "\\%c", *p);
			else if (*p == '\n')
				snprintf(e, sizeof(e), "\\n");
			else if (*p == '\t')
				snprintf(e, sizeof(e), "\\t");
			else if (*p == '\r')
				snprintf(e, sizeof(e), "\\r");
			else if (u < 0x20 || u == 0x7F ||
				 (u == 0xC2 && (unsigned char)p[1] >= 0x80 &&
				  (unsigned char)p[1] < 0xA0))
				snprintf(e, sizeof(e), "\\x%02X", u);
			else if (p > w.s && (unsigned char)p[-1] == 0xC2 && u >= 0x80 && u < 0xA0)
				snprintf(e, sizeof(e), "\\x%02X", u);
			else
				snprintf(e, sizeof(e), "%c", *p);
			sb_str(b, e);
		}
		sb_str(b, "'");
	} else if (shell_safe(w.s)) {
		sb_str(b, w.s);
	} else {
		sb_str(b, "'");
		for (p = w.s; *p; p++) {
			if (*p == '\'')
				sb_str(b, "'\\''");
			else
				sb_add(b, p, 1);
		}
		sb_str(b, "'");
	}
	free(w.s);
}

/* A parameter given as an object {"name"?, "type", "value", "identifying"}
 * or as a bare value. */
static void add_param_json(struct sbuf *b, const char *name, const json_t *v)
{
	char vbuf[CB_PARAM_VALUE_MAX + 64], tbuf[32], nbuf[CB_PARAM_NAME_MAX + 8];
	const char *value, *type = NULL;
	int identifying = 1;

	if (json_is_object(v)) {
		const json_t *id = json_object_get(v, "identifying");

		if (!name)
			name = cb__cli_json_get_text(v, "name", nbuf, sizeof(nbuf));
		type = cb__cli_json_get_text(v, "type", tbuf, sizeof(tbuf));
		if (!type)
			type = cb__cli_json_get_text(v, "parameter_type", tbuf, sizeof(tbuf));
		value = cb__cli_json_get_text(v, "value", vbuf, sizeof(vbuf));
		if (!value)
			value = cb__cli_json_get_text(v, "parameter_value", vbuf, sizeof(vbuf));
		if (json_is_boolean(id))
			identifying = json_is_true(id);
		else if (json_is_string(id))
			identifying = strcmp(json_string_value(id), "N") != 0 &&
				      strcmp(json_string_value(id), "false") != 0;
	} else {
		json_t *wrap = json_pack("{sO}", "v", (json_t *)v);

		value = wrap ? cb__cli_json_get_text(wrap, "v", vbuf, sizeof(vbuf)) : NULL;
		if (json_is_integer(v))
			type = "long";
		else if (json_is_real(v))
			type = "double";
		json_decref(wrap);
	}
	add_param(b, name ? name : "?", type, value, identifying);
}

int cb__cli_fmt_params(char **out, const json_t *params)
{
	struct sbuf b = { NULL, 0, 0, 0 };
	size_t i;

	sb_str(&b, "");
	if (json_is_object(params)) {
		void *it;

		for (it = json_object_iter((json_t *)params); it;
		     it = json_object_iter_next((json_t *)params, it))
			add_param_json(&b, json_object_iter_key(it), json_object_iter_value(it));
	} else if (json_is_array(params)) {
		for (i = 0; i < json_array_size(params); i++)
			add_param_json(&b, NULL, json_array_get(params, i));
	}
	if (b.failed) {
		free(b.s);
		*out = NULL;
		return CB_ENOMEM;
	}
	*out = b.s;
	return 0;
}
