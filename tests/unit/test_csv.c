/*
 * Unit tests for the CSV reader (readers/csv.c) and writer (writers/csv.c),
 * on real files in a scratch directory. The readers and writers are driven
 * by hand, as the step engine would: open, read x n, update, (rollback),
 * close, free, with a step context on the stack and no transaction.
 *
 * The data-driven cases live in tests/data/csv/<case>/: input.csv, an
 * optional `options` file (key=value lines: header, delimiter, columns,
 * required, keep_empty_lines, max_field) and expected.txt, in which
 *
 *     header: a|b|c              the header's names (header=1)
 *     <line>: f1|f2|"f3"         a record: its line, its fields joined by '|';
 *                                quoted fields in "", and \\ \| \" \n \r \t
 *                                \0 escapes inside fields
 *     error: input.csv:L:C: ...  a read error (the path shortened to its name)
 *     open error: ...            open failed (nothing else follows)
 *
 * Each case is read with several buffer sizes (1, 2, 3, 7 bytes and the
 * default) and chunk boundaries every 2 records; all must give expected.txt.
 * `unit_test_csv CASE` runs only that case. The writer's tests are in
 * test_csv_writer.c.
 */
#include "cbatch/readers.h"
#include "cbatch/writers.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbtest.h"
#include "csv_kit.h"
#include "step_context.h"
#include "../../writers/file_sink.h"

static const char *only_case;

/* A string builder. */
typedef struct sbuf {
	char *s;
	size_t len, cap;
} sbuf;

static void sb_addn(sbuf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->s = realloc(b->s, cap);
		b->cap = cap;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_add(sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

static void sb_addf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
static void sb_addf(sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_add(b, tmp);
}

/* One record as an expected.txt line (without the newline). */
static void describe_record(sbuf *b, const cb_csv_record *r)
{
	size_t i, k;

	sb_addf(b, "%lld: ", r->line);
	for (i = 0; i < r->nfields; i++) {
		const cb_csv_field *f = &r->fields[i];

		if (i)
			sb_add(b, "|");
		if (f->quoted)
			sb_add(b, "\"");
		for (k = 0; k < f->len; k++) {
			char c = f->data[k];

			switch (c) {
			case '\\':
				sb_add(b, "\\\\");
				break;
			case '|':
				sb_add(b, "\\|");
				break;
			case '"':
				sb_add(b, "\\\"");
				break;
			case '\n':
				sb_add(b, "\\n");
				break;
			case '\r':
				sb_add(b, "\\r");
				break;
			case '\t':
				sb_add(b, "\\t");
				break;
			case '\0':
				sb_add(b, "\\0");
				break;
			default:
				sb_addn(b, &c, 1);
			}
		}
		if (f->quoted)
			sb_add(b, "\"");
	}
}

/* Replace every occurrence of @p from in @p s by @p to (into a new sbuf). */
static void sb_add_replaced(sbuf *b, const char *s, const char *from, const char *to)
{
	size_t n = strlen(from);
	const char *p;

	while ((p = strstr(s, from)) != NULL) {
		sb_addn(b, s, (size_t)(p - s));
		sb_add(b, to);
		s = p + n;
	}
	sb_add(b, s);
}

/* ---- the data-driven cases ----------------------------------------------- */

struct case_opts {
	cb_csv_options o;
	char delim[8];
	char *required[16];
	size_t nrequired;
};

static int parse_options(const char *file, struct case_opts *co)
{
	char *text = cbt_slurp(file, NULL);
	char *line, *save = NULL;

	co->o = (cb_csv_options)CB_CSV_OPTIONS_INIT;
	co->nrequired = 0;
	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		const char *k = line, *v;

		if (!eq || line[0] == '#')
			continue;
		*eq = '\0';
		v = eq + 1;
		if (strcmp(k, "header") == 0) {
			co->o.header = atoi(v);
		} else if (strcmp(k, "delimiter") == 0) {
			co->o.delimiter = strcmp(v, "\\t") == 0 ? '\t' : v[0];
		} else if (strcmp(k, "columns") == 0) {
			co->o.ncolumns = strcmp(v, "any") == 0 ? CB_CSV_ANY_COLUMNS :
								 (size_t)strtoul(v, NULL, 10);
		} else if (strcmp(k, "keep_empty_lines") == 0) {
			co->o.keep_empty_lines = atoi(v);
		} else if (strcmp(k, "max_field") == 0) {
			co->o.max_field = (size_t)strtoul(v, NULL, 10);
		} else if (strcmp(k, "required") == 0) {
			char *p, *s2 = NULL, *copy = strdup(v);

			for (p = strtok_r(copy, ",", &s2); p && co->nrequired < 16;
			     p = strtok_r(NULL, ",", &s2))
				co->required[co->nrequired++] = strdup(p);
			free(copy);
		} else {
			CBT_FAILF("%s: unknown option '%s'", file, k);
			free(text);
			return -1;
		}
	}
	co->o.required_columns = (const char *const *)co->required;
	co->o.nrequired = co->nrequired;
	free(text);
	return 0;
}

/* Read @p input with @p o; the expected.txt text of what comes out. */
static char *run_case(const cb_csv_options *o, const char *case_dir)
{
	struct cb_step_context sc = step(2);
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	sbuf out = { 0 };
	char from[4700];
	int rc, n = 0, guard = 0;

	snprintf(from, sizeof(from), "%s/", case_dir);
	if (cb_csv_reader_new(&r, o, &err) < 0) {
		sb_add(&out, "new error: ");
		sb_add(&out, err.message);
		sb_add(&out, "\n");
		return out.s;
	}
	rc = r.open(r.state, &sc, NULL, &err);
	if (rc < 0) {
		sb_add(&out, "open error: ");
		sb_add_replaced(&out, err.message, from, "");
		sb_add(&out, "\n");
		r.free(r.state);
		return out.s;
	}
	if (o->header) {
		const cb_csv_header *h = cb_csv_reader_header(&r);
		size_t i;

		sb_add(&out, "header: ");
		for (i = 0; i < cb_csv_header_count(h); i++) {
			if (i)
				sb_add(&out, "|");
			sb_add(&out, cb_csv_header_name(h, i));
		}
		sb_add(&out, "\n");
	}
	for (;;) {
		void *item = NULL;

		cb_error_clear(&err);
		rc = r.read(r.state, NULL, &item, &err);
		if (rc == CB_DONE)
			break;
		if (rc == CB_EINVAL) {
			sb_add(&out, "error: ");
			sb_add_replaced(&out, err.message, from, "");
			sb_add(&out, "\n");
		} else if (rc < 0) {
			sb_addf(&out, "fatal %s: %s\n", cb_strcode(rc), err.message);
			break;
		} else {
			describe_record(&out, item);
			sb_add(&out, "\n");
		}
		/* a chunk boundary every two reads */
		if (++n % 2 == 0) {
			json_t *ctx = json_object();

			if (r.update(r.state, ctx, &err) < 0)
				sb_addf(&out, "update error: %s\n", err.message);
			json_decref(ctx);
		}
		if (++guard > 100000) {
			sb_add(&out, "runaway\n");
			break;
		}
	}
	r.close(r.state);
	r.free(r.state);
	if (!out.s)
		sb_add(&out, "");
	return out.s;
}

static int run_one_case(const char *root, const char *name)
{
	char case_dir[4600], input[4700], expected_path[4700], options[4700];
	static const size_t sizes[] = { 0, 1, 2, 3, 7 };
	struct case_opts co;
	char *expected, *got;
	size_t i;
	int ok = 1;

	snprintf(case_dir, sizeof(case_dir), "%s/%s", root, name);
	snprintf(input, sizeof(input), "%s/input.csv", case_dir);
	snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", case_dir);
	snprintf(options, sizeof(options), "%s/options", case_dir);
	expected = cbt_slurp(expected_path, NULL);
	if (!expected) {
		CBT_FAILF("case %s: no expected.txt", name);
		return 0;
	}
	if (parse_options(options, &co) < 0) {
		free(expected);
		return 0;
	}
	co.o.path = input;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		co.o.buffer_size = sizes[i];
		got = run_case(&co.o, case_dir);
		if (strcmp(got, expected) != 0) {
			CBT_FAILF(
				"case %s (buffer %zu): output differs\n--- expected\n%s--- got\n%s",
				name, sizes[i], expected, got);
			ok = 0;
			free(got);
			break;
		}
		free(got);
	}
	for (i = 0; i < co.nrequired; i++)
		free(co.required[i]);
	free(expected);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_data_cases(void)
{
	char root[4200];
	char *names[512];
	size_t n = 0, i, passed = 0;
	struct dirent *de;
	DIR *d;

	snprintf(root, sizeof(root), "%s/tests/data/csv", cbt_source_dir());
	d = opendir(root);
	if (!d) {
		CBT_FAILF("cannot open %s: %s", root, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL && n < 512) {
		if (de->d_name[0] == '.')
			continue;
		if (only_case && strcmp(only_case, de->d_name) != 0)
			continue;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	if (n == 0)
		CBT_FAILF("no CSV cases under %s%s%s", root, only_case ? " named " : "",
			  only_case ? only_case : "");
	for (i = 0; i < n; i++) {
		passed += (size_t)run_one_case(root, names[i]);
		free(names[i]);
	}
	printf("\n    %zu of %zu CSV cases passed ", passed, n);
	CBT_EQ_LL(passed, n);
}

/* ---- reader -------------------------------------------------------------- */
/* Read one record; fatal unless it comes. */
static const cb_csv_record *must_read(cb_reader *r)
{
	cb_error err = CB_ERROR_INIT;
	void *item = NULL;

	CBT_PASS_FATAL(r->read(r->state, NULL, &item, &err), &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(item);
	return item;
}

static int read_rc(cb_reader *r, const cb_csv_record **rec, cb_error *err)
{
	void *item = NULL;
	int rc;

	cb_error_clear(err);
	rc = r->read(r->state, NULL, &item, err);
	*rec = item;
	return rc;
}

static json_t *update(cb_reader *r)
{
	cb_error err = CB_ERROR_INIT;
	json_t *o = json_object();

	CBT_PASS(r->update(r->state, o, &err), &err);
	return o;
}

static void test_big_field(void)
{
	const size_t big = (size_t)4 << 20;
	sbuf in = { 0 }, want = { 0 };
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec;
	cb_reader r;
	size_t i, len;
	const char *f;
	char *plain;

	/* record 1: a quoted 4 MiB field full of delimiters, quotes and line breaks */
	for (i = 0; i < big; i++) {
		char c = "ab,\"\n\r x"[i % 8];

		sb_addn(&want, &c, 1);
	}
	sb_add(&in, "1,\"");
	for (i = 0; i < want.len; i++) {
		sb_addn(&in, &want.s[i], 1);
		if (want.s[i] == '"')
			sb_add(&in, "\"");
	}
	sb_add(&in, "\",end\n");
	/* record 2: an unquoted 4 MiB field */
	plain = malloc(big + 1);
	memset(plain, 'z', big);
	plain[big] = '\0';
	sb_add(&in, "2,");
	sb_add(&in, plain);
	sb_add(&in, ",end\r\n3,small,end\n");
	write_file(path_of("big.csv"), in.s, in.len);

	o.path = path_of("big.csv");
	o.ncolumns = 3;
	open_reader(&r, &o, NULL);
	rec = must_read(&r);
	CBT_EQ_LL(rec->nfields, 3);
	CBT_EQ_LL(rec->line, 1);
	f = cb_csv_record_field(rec, 1, &len);
	CBT_EQ_LL(len, big);
	CU_ASSERT(f && memcmp(f, want.s, big) == 0);
	CU_ASSERT(f && f[len] == '\0');
	CBT_EQ_STR(cb_csv_record_field(rec, 2, NULL), "end");
	rec = must_read(&r);
	/* record 1 held big / 8 LFs and as many lone CRs, and its own line end */
	CBT_EQ_LL(rec->line, 2 + (long long)(big / 8) * 2);
	f = cb_csv_record_field(rec, 1, &len);
	CBT_EQ_LL(len, big);
	CU_ASSERT(f && memcmp(f, plain, big) == 0);
	rec = must_read(&r);
	CBT_EQ_LL(rec->line, 3 + (long long)(big / 8) * 2);
	CBT_EQ_STR(cb_csv_record_field(rec, 1, NULL), "small");
	close_reader(&r);
	free(in.s);
	free(want.s);
	free(plain);
}

static void test_field_limit(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec;
	cb_error err = CB_ERROR_INIT;
	sbuf in = { 0 };
	cb_reader r;
	char msg[600];
	size_t i;

	sb_add(&in, "a,b\n");
	sb_add(&in, "c,\"");
	for (i = 0; i < 3000; i++)
		sb_add(&in, i % 100 == 0 ? "\"\",\n" : "xxxx");
	sb_add(&in, "\"\nd,e\n");
	write_file(path_of("limit.csv"), in.s, in.len);
	o.path = path_of("limit.csv");
	o.max_field = 1000;
	open_reader(&r, &o, NULL);
	rec = must_read(&r);
	CBT_EQ_STR(cb_csv_record_field(rec, 0, NULL), "a");
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_EINVAL);
	snprintf(msg, sizeof(msg), "%s:2:3: field 2 is longer than 1000 bytes", o.path);
	CBT_EQ_STR(err.message, msg);
	/* the rest of the long quoted field is skipped as part of the bad record */
	rec = must_read(&r);
	CBT_EQ_STR(cb_csv_record_field(rec, 0, NULL), "d");
	CBT_EQ_LL(rec->line, 2 + 30 + 1);
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_DONE);
	close_reader(&r);
	free(in.s);
}

static void test_header_lookup(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const char *req[] = { "amount", "id" };
	const cb_csv_header *h;
	const cb_csv_record *rec;
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	long long id;
	double amount;
	size_t len;
	char msg[600];

	write_str(path_of("hdr.csv"), "id;\"seller;id\";amount\n"
				      "1;7;12.50\n"
				      "x2;8;1e400\n"
				      "3;;\"\"\n");
	o.path = path_of("hdr.csv");
	o.header = 1;
	o.delimiter = ';';
	o.required_columns = req;
	o.nrequired = 2;
	open_reader(&r, &o, NULL);
	h = cb_csv_reader_header(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CBT_EQ_LL(cb_csv_header_count(h), 3);
	CBT_EQ_STR(cb_csv_header_name(h, 1), "seller;id");
	CU_ASSERT_PTR_NULL(cb_csv_header_name(h, 3));
	CBT_EQ_LL(cb_csv_header_index(h, "amount"), 2);
	CBT_EQ_LL(cb_csv_header_index(h, "Amount"), -1);

	rec = must_read(&r);
	CBT_EQ_LL(rec->line, 2);
	CBT_EQ_LL(cb_csv_record_line(rec), 2);
	CBT_EQ_LL(cb_csv_record_nfields(rec), 3);
	CU_ASSERT_PTR_EQUAL(rec->header, h);
	CBT_EQ_LL(cb_csv_record_index(rec, "seller;id"), 1);
	CBT_EQ_STR(cb_csv_record_get(rec, "amount", &len), "12.50");
	CBT_EQ_LL(len, 5);
	CU_ASSERT_PTR_NULL(cb_csv_record_get(rec, "nope", &len));
	CBT_EQ_LL(len, 0);
	CU_ASSERT_PTR_NULL(cb_csv_record_field(rec, 3, NULL));
	CBT_PASS(cb_csv_record_long(rec, 0, &id, &err), &err);
	CBT_EQ_LL(id, 1);
	CBT_PASS(cb_csv_record_double(rec, 2, &amount, &err), &err);
	CU_ASSERT_DOUBLE_EQUAL(amount, 12.5, 1e-9);

	rec = must_read(&r);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_record_long(rec, 0, &id, &err), &err);
	snprintf(msg, sizeof(msg), "%s:3: field 1 (\"id\"): \"x2\" is not an integer", o.path);
	CBT_EQ_STR(err.message, msg);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_record_double(rec, 2, &amount, &err), &err);
	CBT_CONTAINS(err.message, "\"1e400\" is not a number");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_record_long(rec, 5, &id, &err), &err);
	CBT_CONTAINS(err.message, "field 6 is missing");

	rec = must_read(&r);
	CU_ASSERT(rec->fields[1].len == 0 && !rec->fields[1].quoted);
	CU_ASSERT(rec->fields[2].len == 0 && rec->fields[2].quoted);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_record_long(rec, 1, &id, &err), &err);
	close_reader(&r);

	/* not a CSV reader, or no header */
	CU_ASSERT_PTR_NULL(cb_csv_reader_header(NULL));
	o.header = 0;
	o.required_columns = NULL;
	o.nrequired = 0;
	open_reader(&r, &o, NULL);
	CU_ASSERT_PTR_NULL(cb_csv_reader_header(&r));
	rec = must_read(&r);
	CU_ASSERT_PTR_NULL(rec->header);
	CBT_EQ_LL(cb_csv_record_index(rec, "id"), -1);
	close_reader(&r);
}

/* 10 records, some over several lines; their first fields are 1..10. */
static const char restart_csv[] = "1,a\n"
				  "2,\"b\nb\"\n"
				  "3,c\r\n"
				  "4,\"d\r\nd\r\nd\"\n"
				  "\n"
				  "5,e\n"
				  "6,f\n"
				  "7,\"g\"\n"
				  "8,h\n"
				  "9,\"i\ni\"\n"
				  "10,j";
static const long long restart_lines[] = { 1, 2, 4, 5, 9, 10, 11, 12, 13, 15 };

static long long first_int(const cb_csv_record *rec)
{
	return strtoll(cb_csv_record_field(rec, 0, NULL), NULL, 10);
}

static void test_restart(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec;
	cb_error err = CB_ERROR_INIT;
	json_t *ctx1, *ctx2;
	cb_reader r;
	int seen[11] = { 0 };
	int i, stop;

	write_str(path_of("restart.csv"), restart_csv);
	o.path = path_of("restart.csv");
	o.ncolumns = 2;
	/* stop after 1..4 chunks of 3 and restart from the last committed context */
	for (stop = 1; stop <= 4; stop++) {
		int committed = 0;

		memset(seen, 0, sizeof(seen));
		open_reader(&r, &o, NULL);
		ctx1 = NULL;
		for (i = 0; i < 3 * stop && i < 10; i++) {
			rec = must_read(&r);
			seen[first_int(rec)]++;
			CBT_EQ_LL(rec->line, restart_lines[first_int(rec) - 1]);
			if (i % 3 == 2) {
				json_decref(ctx1);
				ctx1 = update(&r);
				committed = i + 1;
			}
		}
		/* records of a chunk that did not commit come again after the restart */
		close_reader(&r);
		for (i = committed + 1; i <= 10; i++)
			seen[i] = 0;
		open_reader(&r, &o, ctx1);
		while (read_rc(&r, &rec, &err) == 0) {
			seen[first_int(rec)]++;
			CBT_EQ_LL(rec->line, restart_lines[first_int(rec) - 1]);
		}
		CBT_EQ_LL(err.code, 0);
		for (i = 1; i <= 10; i++)
			if (seen[i] != 1)
				CBT_FAILF("stop %d: record %d read %d times", stop, i, seen[i]);
		close_reader(&r);
		json_decref(ctx1);
	}

	/* the saved context's shape */
	open_reader(&r, &o, NULL);
	for (i = 0; i < 4; i++)
		must_read(&r);
	ctx2 = update(&r);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx2, "offset")), 29);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx2, "line")), 8);
	close_reader(&r);
	/* the blank line 8 is skipped after a restart too */
	open_reader(&r, &o, ctx2);
	rec = must_read(&r);
	CBT_EQ_LL(first_int(rec), 5);
	CBT_EQ_LL(rec->line, 9);
	CBT_EQ_LL(rec->offset, 30);
	close_reader(&r);
	json_decref(ctx2);
}

static void test_restart_bad_context(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	json_t *ctx;
	char msg[800];

	write_str(path_of("short.csv"), "1,a\n2,b\n3,c");
	o.path = path_of("short.csv");
	CBT_PASS_FATAL(cb_csv_reader_new(&r, &o, &err), &err);

	ctx = json_pack("{sisi}", "offset", 100, "line", 9);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	snprintf(msg, sizeof(msg),
		 "%s: saved position (offset 100, line 9) is past the end of the file (11 bytes): "
		 "the file changed since it was saved",
		 o.path);
	CBT_EQ_STR(err.message, msg);
	json_decref(ctx);

	cb_error_clear(&err);
	ctx = json_pack("{sisi}", "offset", 5, "line", 2);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	CBT_CONTAINS(err.message, "does not follow a line break");
	CBT_CONTAINS(err.message, o.path);
	json_decref(ctx);

	cb_error_clear(&err);
	ctx = json_pack("{sssi}", "offset", "4", "line", 2);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	CBT_CONTAINS(err.message, "saved position is not");
	json_decref(ctx);

	/* the end of a file without a final line break is a valid position... */
	cb_error_clear(&err);
	ctx = json_pack("{sisi}", "offset", 11, "line", 3);
	CBT_PASS(r.open(r.state, &sc, ctx, &err), &err);
	{
		void *item = (void *)1;

		CBT_EQ_LL(r.read(r.state, NULL, &item, &err), CB_DONE);
		CU_ASSERT_PTR_NULL(item);
	}
	r.close(r.state);
	/* ...until something is appended to that last line */
	write_str(path_of("short.csv"), "1,a\n2,b\n3,cc\n4,d\n");
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	CBT_CONTAINS(err.message, "does not follow a line break");
	json_decref(ctx);

	/* a missing file */
	cb_error_clear(&err);
	r.free(r.state);
	o.path = path_of("missing.csv");
	CBT_PASS_FATAL(cb_csv_reader_new(&r, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "missing.csv: cannot open");
	r.free(r.state);
}

static void test_rollback(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec, *keep[3];
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	json_t *ctx;
	int i;

	write_str(path_of("rollback.csv"), restart_csv);
	o.path = path_of("rollback.csv");
	open_reader(&r, &o, NULL);
	for (i = 0; i < 3; i++)
		keep[i] = must_read(&r);
	ctx = update(&r);
	/* items stay valid until the next read after update */
	CBT_EQ_STR(cb_csv_record_field(keep[1], 1, NULL), "b\nb");
	CBT_EQ_STR(cb_csv_record_field(keep[2], 0, NULL), "3");
	json_decref(ctx);
	/* chunk 2 fails half-way: rollback rewinds to after record 3 */
	CBT_EQ_LL(first_int(must_read(&r)), 4);
	CBT_EQ_LL(first_int(must_read(&r)), 5);
	r.rollback(r.state);
	rec = must_read(&r);
	CBT_EQ_LL(first_int(rec), 4);
	CBT_EQ_LL(rec->line, 5);
	CBT_EQ_LL(first_int(must_read(&r)), 5);
	CBT_EQ_LL(first_int(must_read(&r)), 6);
	/* update ran, but the COMMIT failed: rollback forgets that update too */
	ctx = update(&r);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "line")), 11);
	json_decref(ctx);
	r.rollback(r.state);
	CBT_EQ_LL(first_int(must_read(&r)), 4);
	CBT_EQ_LL(first_int(must_read(&r)), 5);
	CBT_EQ_LL(first_int(must_read(&r)), 6);
	ctx = update(&r);
	json_decref(ctx);
	/* this time it committed (a read follows the update): a rollback goes back only to it */
	CBT_EQ_LL(first_int(must_read(&r)), 7);
	r.rollback(r.state);
	CBT_EQ_LL(first_int(must_read(&r)), 7);
	/* rollback right at the start of the file */
	r.close(r.state);
	CBT_PASS(r.open(r.state, NULL, NULL, &err), &err);
	CBT_EQ_LL(first_int(must_read(&r)), 1);
	r.rollback(r.state);
	CBT_EQ_LL(first_int(must_read(&r)), 1);
	close_reader(&r);
}

static void test_continue_after_error(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec;
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	json_t *ctx;
	char msg[600];

	write_str(path_of("accounts.csv"), "id,seller_id,amount\n"
					   "1,7,10.00\n"
					   "2,7,1\"0\n"
					   "3,8\n"
					   "4,8,\"5\"x,\n"
					   "5,9,12.00\n");
	o.path = path_of("accounts.csv");
	o.header = 1;
	open_reader(&r, &o, NULL);
	CBT_EQ_LL(first_int(must_read(&r)), 1);
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_EINVAL);
	CU_ASSERT_PTR_NULL(rec);
	snprintf(msg, sizeof(msg), "%s:3:6: unexpected '\"' in unquoted field", o.path);
	CBT_EQ_STR(err.message, msg);
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_EINVAL);
	snprintf(msg, sizeof(msg), "%s:4:4: expected 3 fields, found 2", o.path);
	CBT_EQ_STR(err.message, msg);
	/* the position is past the bad records: a skip commits it */
	ctx = update(&r);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "line")), 5);
	json_decref(ctx);
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_EINVAL);
	snprintf(msg, sizeof(msg), "%s:5:8: unexpected 'x' after closing quote", o.path);
	CBT_EQ_STR(err.message, msg);
	rec = must_read(&r);
	CBT_EQ_LL(first_int(rec), 5);
	CBT_EQ_LL(rec->line, 6);
	CBT_EQ_LL(read_rc(&r, &rec, &err), CB_DONE);
	/* describe names file and line */
	close_reader(&r);

	write_str(path_of("accounts.csv"), "1,2\n");
	o.header = 0;
	open_reader(&r, &o, NULL);
	rec = must_read(&r);
	{
		char buf[600];

		r.describe(r.state, rec, buf, sizeof(buf));
		snprintf(msg, sizeof(msg), "%s:1", o.path);
		CBT_EQ_STR(buf, msg);
	}
	close_reader(&r);
}

static void test_many_records(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const cb_csv_record *rec;
	cb_error err = CB_ERROR_INIT;
	sbuf in = { 0 };
	cb_reader r;
	long long n = 0, line = 1;
	int i, rc;

	for (i = 0; i < 20000; i++)
		sb_addf(&in, i % 3 ? "%d,\"x\"\"%d\",\"multi\nline\"\n" : "%d,plain%d,z\r\n", i, i);
	write_file(path_of("many.csv"), in.s, in.len);
	o.path = path_of("many.csv");
	o.buffer_size = 13;
	open_reader(&r, &o, NULL);
	while ((rc = read_rc(&r, &rec, &err)) == 0) {
		if (first_int(rec) != n || rec->line != line) {
			CBT_FAILF("record %lld: got id %lld at line %lld, want line %lld", n,
				  first_int(rec), rec->line, line);
			break;
		}
		line += n % 3 ? 2 : 1;
		n++;
		if (n % 100 == 0)
			json_decref(update(&r));
	}
	CBT_EQ_LL(rc, CB_DONE);
	CBT_EQ_LL(n, 20000);
	close_reader(&r);
	free(in.s);
}

static void test_reader_options(void)
{
	cb_csv_options o = CB_CSV_OPTIONS_INIT;
	const char *req[] = { "a" };
	cb_error err = CB_ERROR_INIT;
	cb_reader r;

	CBT_FAILS_WITH(CB_EINVAL, cb_csv_reader_new(&r, &o, &err), &err);
	CBT_CONTAINS(err.message, "no path");
	o.path = "x.csv";
	o.delimiter = '"';
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_reader_new(&r, &o, &err), &err);
	o.delimiter = '\n';
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_reader_new(&r, &o, &err), &err);
	o.delimiter = ',';
	o.required_columns = req;
	o.nrequired = 1;
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_reader_new(&r, &o, &err), &err);
	CBT_CONTAINS(err.message, "need a header");
	o.nrequired = 0;
	o.version = 99;
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_reader_new(&r, &o, &err), &err);
	/* a read before open */
	o.version = CB_CSV_OPTIONS_VERSION;
	CBT_PASS_FATAL(cb_csv_reader_new(&r, &o, &err), &err);
	{
		void *item;

		cb_error_clear(&err);
		CBT_FAILS_WITH(CB_EINVAL, r.read(r.state, NULL, &item, &err), &err);
	}
	r.free(r.state);
}

/* ---- suite --------------------------------------------------------------- */

static const CU_TestInfo tests[] = {
	{ "data cases (tests/data/csv)", test_data_cases },
	{ "4 MiB fields", test_big_field },
	{ "field longer than max_field", test_field_limit },
	{ "header, lookup by name, numbers", test_header_lookup },
	{ "restart from a saved offset", test_restart },
	{ "restart with a bad context", test_restart_bad_context },
	{ "rollback rewinds to the last update", test_rollback },
	{ "continue after a malformed record", test_continue_after_error },
	{ "20000 records through a 13-byte buffer", test_many_records },
	{ "reader options", test_reader_options },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	static const CU_TestInfo one[] = {
		{ "data case", test_data_cases },
		CU_TEST_INFO_NULL,
	};

	/* Not the harness's --list / --run. */
	if (argc > 1 && argv[1][0] != '-') {
		only_case = argv[1];
		return cbt_main("csv", init, clean, one);
	}
	return cbt_main("csv", init, clean, tests);
}
