/*
 * Unit tests for the JSON lines reader (readers/jsonl.c) and writer
 * (writers/jsonl.c), on real files in a scratch directory, driven by hand
 * as the step engine would drive them (no database, no transaction).
 */
#include "cbatch/readers.h"
#include "cbatch/writers.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cbtest.h"
#include "step_context.h"

static char dir[4096];

static const char *path_of(const char *name)
{
	static char buf[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static struct cb_step_context step(size_t chunk_size)
{
	struct cb_step_context sc;

	memset(&sc, 0, sizeof(sc));
	sc.job_name = "test";
	sc.step_name = "jsonl";
	sc.chunk_size = chunk_size;
	return sc;
}

static void open_reader(cb_reader *r, const cb_jsonl_options *o, const json_t *saved)
{
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(cb_jsonl_reader_new(r, o, &err), &err);
	CBT_PASS_FATAL(r->open(r->state, &sc, saved, &err), &err);
}

static void close_reader(cb_reader *r)
{
	r->close(r->state);
	r->free(r->state);
}

static int read_rc(cb_reader *r, json_t **v, cb_error *err)
{
	void *item = NULL;
	int rc;

	cb_error_clear(err);
	rc = r->read(r->state, NULL, &item, err);
	*v = item;
	return rc;
}

static json_t *must_read(cb_reader *r)
{
	cb_error err = CB_ERROR_INIT;
	json_t *v = NULL;

	CBT_PASS_FATAL(read_rc(r, &v, &err), &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	return v;
}

static long long id_of(const json_t *v)
{
	return (long long)json_integer_value(json_object_get(v, "id"));
}

static json_t *update(cb_reader *r)
{
	cb_error err = CB_ERROR_INIT;
	json_t *o = json_object();

	CBT_PASS(r->update(r->state, o, &err), &err);
	return o;
}

/* ---- reader -------------------------------------------------------------- */

static const char lines[] = "{\"id\": 1, \"name\": \"a\"}\n"
			    "\n"
			    "   \t\r\n"
			    "{\"id\": 2, \"nested\": {\"x\": [1, 2]}}\r\n"
			    "{\"id\":3}\n"
			    "{\"id\": 4, \"s\": \"line\\nbreak\"}\n"
			    "{\"id\": 5}";

static void test_read(void)
{
	cb_jsonl_options o = CB_JSONL_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	json_t *v, *first;
	cb_reader r;
	char buf[600], want[600];

	cbt_write_str(path_of("a.jsonl"), lines);
	o.path = path_of("a.jsonl");
	open_reader(&r, &o, NULL);
	first = must_read(&r);
	CBT_EQ_LL(id_of(first), 1);
	CBT_EQ_STR(json_string_value(json_object_get(first, "name")), "a");
	CBT_EQ_LL(cb_jsonl_reader_line(&r, first), 1);
	v = must_read(&r);
	CBT_EQ_LL(id_of(v), 2);
	CBT_EQ_LL(cb_jsonl_reader_line(&r, v), 4);
	CBT_EQ_LL(json_array_size(json_object_get(json_object_get(v, "nested"), "x")), 2);
	r.describe(r.state, v, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s:4", o.path);
	CBT_EQ_STR(buf, want);
	CBT_EQ_LL(id_of(must_read(&r)), 3);
	v = must_read(&r);
	CBT_EQ_STR(json_string_value(json_object_get(v, "s")), "line\nbreak");
	/* items stay valid until the first read after update */
	json_decref(update(&r));
	CBT_EQ_LL(id_of(first), 1);
	v = must_read(&r);
	CBT_EQ_LL(id_of(v), 5);
	CBT_EQ_LL(cb_jsonl_reader_line(&r, v), 7);
	CBT_EQ_LL(cb_jsonl_reader_line(&r, first), 0);
	CBT_EQ_LL(read_rc(&r, &v, &err), CB_DONE);
	CU_ASSERT_PTR_NULL(v);
	CBT_EQ_LL(cb_jsonl_reader_line(NULL, v), 0);
	close_reader(&r);

	/* a tiny buffer gives the same values */
	o.buffer_size = 3;
	open_reader(&r, &o, NULL);
	CBT_EQ_LL(id_of(must_read(&r)), 1);
	CBT_EQ_LL(id_of(must_read(&r)), 2);
	CBT_EQ_LL(id_of(must_read(&r)), 3);
	CBT_EQ_LL(id_of(must_read(&r)), 4);
	CBT_EQ_LL(id_of(must_read(&r)), 5);
	CBT_EQ_LL(read_rc(&r, &v, &err), CB_DONE);
	close_reader(&r);
}

static void test_malformed(void)
{
	cb_jsonl_options o = CB_JSONL_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	json_t *v, *ctx;
	char want[800];

	cbt_write_str(path_of("bad.jsonl"),
		      "{\"id\": 1}\n"
		      "{\"id\": 2,}\n"
		      "{\"id\": 3} x\n"
		      "[1, 2]\n"
		      "{\"id\":\n"
		      "{\"id\": 6}\n"
		      "\"just a string\"\n"
		      "{\"id\": 8, \"pad\": \"0123456789012345678901234567890123456789\"}\n"
		      "{\"id\": 9}\n");
	o.path = path_of("bad.jsonl");
	o.max_line = 40;
	open_reader(&r, &o, NULL);
	CBT_EQ_LL(id_of(must_read(&r)), 1);
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	CU_ASSERT_PTR_NULL(v);
	snprintf(want, sizeof(want), "%s:2:10: string or '}' expected near '}'", o.path);
	CBT_EQ_STR(err.message, want);
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	snprintf(want, sizeof(want), "%s:3:11: end of file expected near 'x'", o.path);
	CBT_EQ_STR(err.message, want);
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	snprintf(want, sizeof(want), "%s:4:1: expected a JSON object, found an array", o.path);
	CBT_EQ_STR(err.message, want);
	/* the position passes the bad lines: a skip policy commits it */
	ctx = update(&r);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "line")), 5);
	json_decref(ctx);
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	snprintf(want, sizeof(want), "%s:5:", o.path);
	CBT_CONTAINS(err.message, want);
	CBT_CONTAINS(err.message, "end of file");
	CBT_EQ_LL(id_of(must_read(&r)), 6);
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	CBT_CONTAINS(err.message, ":7:1: expected a JSON object, found a string");
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	snprintf(want, sizeof(want), "%s:8:1: line is longer than 40 bytes", o.path);
	CBT_EQ_STR(err.message, want);
	v = must_read(&r);
	CBT_EQ_LL(id_of(v), 9);
	CBT_EQ_LL(cb_jsonl_reader_line(&r, v), 9);
	CBT_EQ_LL(read_rc(&r, &v, &err), CB_DONE);
	close_reader(&r);

	/* any_value and extra decoding flags */
	cbt_write_str(path_of("any.jsonl"), "[1]\n\"s\"\n{\"a\": 1, \"a\": 2}\n");
	o.path = path_of("any.jsonl");
	o.max_line = 0;
	o.any_value = 1;
	o.decode_flags = JSON_REJECT_DUPLICATES;
	open_reader(&r, &o, NULL);
	v = must_read(&r);
	CU_ASSERT(json_is_array(v));
	v = must_read(&r);
	CU_ASSERT(json_is_string(v));
	CBT_FAILS_WITH(CB_EINVAL, read_rc(&r, &v, &err), &err);
	CBT_CONTAINS(err.message, ":3:");
	CBT_CONTAINS(err.message, "duplicate object key");
	close_reader(&r);
}

static void test_restart_and_rollback(void)
{
	cb_jsonl_options o = CB_JSONL_OPTIONS_INIT;
	struct cb_step_context sc = step(2);
	cb_error err = CB_ERROR_INIT;
	json_t *ctx, *v;
	cb_reader r;

	cbt_write_str(path_of("r.jsonl"), lines);
	o.path = path_of("r.jsonl");
	open_reader(&r, &o, NULL);
	CBT_EQ_LL(id_of(must_read(&r)), 1);
	CBT_EQ_LL(id_of(must_read(&r)), 2);
	ctx = update(&r);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "offset")), 66);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "line")), 5);
	/* chunk 2 rolls back: its values come again */
	CBT_EQ_LL(id_of(must_read(&r)), 3);
	r.rollback(r.state);
	CBT_EQ_LL(id_of(must_read(&r)), 3);
	CBT_EQ_LL(id_of(must_read(&r)), 4);
	/* its update ran, but the COMMIT failed */
	json_decref(update(&r));
	r.rollback(r.state);
	CBT_EQ_LL(id_of(must_read(&r)), 3);
	close_reader(&r);

	/* restart from the committed context: nothing read twice */
	open_reader(&r, &o, ctx);
	v = must_read(&r);
	CBT_EQ_LL(id_of(v), 3);
	CBT_EQ_LL(cb_jsonl_reader_line(&r, v), 5);
	CBT_EQ_LL(id_of(must_read(&r)), 4);
	CBT_EQ_LL(id_of(must_read(&r)), 5);
	CBT_EQ_LL(read_rc(&r, &v, &err), CB_DONE);
	close_reader(&r);
	json_decref(ctx);

	/* a position inside a line, or past the end */
	CBT_PASS_FATAL(cb_jsonl_reader_new(&r, &o, &err), &err);
	ctx = json_pack("{sisi}", "offset", 10, "line", 2);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	CBT_CONTAINS(err.message, "does not follow a line break");
	json_decref(ctx);
	cb_error_clear(&err);
	ctx = json_pack("{sisi}", "offset", 1000, "line", 20);
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, ctx, &err), &err);
	CBT_CONTAINS(err.message, "is past the end of the file");
	CBT_CONTAINS(err.message, o.path);
	json_decref(ctx);
	r.free(r.state);
}

/* ---- writer -------------------------------------------------------------- */

static void open_writer(cb_writer *w, const cb_jsonl_writer_options *o, const json_t *saved)
{
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(cb_jsonl_writer_new(w, o, &err), &err);
	CBT_PASS_FATAL(w->open(w->state, &sc, saved, &err), &err);
}

static void close_writer(cb_writer *w)
{
	w->close(w->state);
	w->free(w->state);
}

static json_t *chunk(cb_writer *w, void **items, size_t n)
{
	cb_error err = CB_ERROR_INIT;
	json_t *ctx = json_object();

	CBT_PASS(w->write(w->state, NULL, items, n, &err), &err);
	CBT_PASS(w->update(w->state, ctx, &err), &err);
	return ctx;
}

static void test_writer(void)
{
	cb_jsonl_writer_options o = CB_JSONL_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	json_t *a = json_pack("{sisssf}", "id", 1, "s", "x\ny", "f", 1.5);
	json_t *b = json_pack("{sis[ii]}", "id", 2, "l", 1, 2);
	json_t *c = json_pack("{si}", "id", 3);
	json_t *num = json_integer(7);
	json_t *ctx1, *ctx2;
	void *items[2];
	cb_writer w;

	o.path = path_of("out.jsonl");
	o.if_exists = CB_FILE_REPLACE;                  /* this test reopens over its old files */
	o.dump_flags = JSON_SORT_KEYS | JSON_INDENT(4); /* indent is ignored */
	cbt_write_str(o.path, "old\n");
	open_writer(&w, &o, NULL);
	CBT_EXPECT_FILE(o.path, "");
	items[0] = a;
	items[1] = b;
	ctx1 = chunk(&w, items, 2);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx1, "offset")), 47);
	items[0] = c;
	ctx2 = chunk(&w, items, 1);
	close_writer(&w);
	CBT_EXPECT_FILE(
		o.path,
		"{\"f\":1.5,\"id\":1,\"s\":\"x\\ny\"}\n{\"id\":2,\"l\":[1,2]}\n{\"id\":3}\n");
	json_decref(ctx2);

	/* restart after chunk 1: chunk 2 (written, never committed) goes */
	open_writer(&w, &o, ctx1);
	CBT_EXPECT_FILE(o.path, "{\"f\":1.5,\"id\":1,\"s\":\"x\\ny\"}\n{\"id\":2,\"l\":[1,2]}\n");
	/* a scalar without JSON_ENCODE_ANY fails the chunk and leaves nothing */
	items[0] = c;
	items[1] = num;
	CBT_FAILS_WITH(CB_EINVAL, w.write(w.state, NULL, items, 2, &err), &err);
	CBT_CONTAINS(err.message, "item 2 of the chunk: cannot encode");
	CBT_CONTAINS(err.message, o.path);
	json_decref(chunk(&w, items, 1));
	close_writer(&w);
	CBT_EXPECT_FILE(
		o.path,
		"{\"f\":1.5,\"id\":1,\"s\":\"x\\ny\"}\n{\"id\":2,\"l\":[1,2]}\n{\"id\":3}\n");

	/* a file shorter than the committed offset */
	cbt_write_str(o.path, "{}\n");
	CBT_PASS_FATAL(cb_jsonl_writer_new(&w, &o, &err), &err);
	cb_error_clear(&err);
	{
		struct cb_step_context sc = step(2);

		CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, ctx1, &err), &err);
	}
	CBT_CONTAINS(err.message, "is shorter than its committed length (47 bytes)");
	w.free(w.state);

	/* JSON_ENCODE_ANY */
	o.dump_flags = JSON_ENCODE_ANY;
	open_writer(&w, &o, NULL);
	items[0] = num;
	json_decref(chunk(&w, items, 1));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "7\n");

	json_decref(ctx1);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(num);
}

/* Items are ints; even ones become {"n": i}, odd ones are left out, 99 fails. */
static int format_int(void *ctx, const void *item, json_t **out, cb_error *err)
{
	int n = *(const int *)item;

	(void)ctx;
	if (n == 99)
		return cb_error_set(err, CB_EINVAL, "n=99 is not allowed");
	if (n == 98)
		return CB_ECALLBACK;
	*out = n % 2 ? NULL : json_pack("{si}", "n", n);
	return 0;
}

static void test_writer_format(void)
{
	cb_jsonl_writer_options o = CB_JSONL_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	int v[5] = { 0, 1, 2, 99, 98 };
	void *items[5] = { &v[0], &v[1], &v[2], &v[3], &v[4] };
	cb_writer w;

	o.path = path_of("fmt.jsonl");
	o.format = format_int;
	open_writer(&w, &o, NULL);
	CBT_FAILS_WITH(CB_EINVAL, w.write(w.state, NULL, items, 4, &err), &err);
	CBT_CONTAINS(err.message, "item 4 of the chunk: n=99 is not allowed");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_ECALLBACK, w.write(w.state, NULL, items + 4, 1, &err), &err);
	CBT_CONTAINS(err.message, "item 1 of the chunk: format returned CB_ECALLBACK");
	json_decref(chunk(&w, items, 3));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "{\"n\":0}\n{\"n\":2}\n");
}

/* Writer to reader: every value comes back as it went out. */
static void test_roundtrip(void)
{
	cb_jsonl_writer_options wo = CB_JSONL_WRITER_OPTIONS_INIT;
	cb_jsonl_options ro = CB_JSONL_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	json_t *src[50], *v;
	void *items[50];
	cb_writer w;
	cb_reader r;
	size_t i;

	for (i = 0; i < 50; i++) {
		src[i] = json_pack("{sis[s]so}", "id", (int)i, "l", "\xc3\xa9\r\n\"", "o",
				   json_pack("{sb}", "t", (int)(i % 2)));
		items[i] = src[i];
	}
	wo.path = path_of("rt.jsonl");
	open_writer(&w, &wo, NULL);
	json_decref(chunk(&w, items, 20));
	json_decref(chunk(&w, items + 20, 30));
	close_writer(&w);
	ro.path = wo.path;
	ro.buffer_size = 5;
	open_reader(&r, &ro, NULL);
	for (i = 0; i < 50; i++) {
		v = must_read(&r);
		CU_ASSERT(json_equal(v, src[i]));
		CBT_EQ_LL(cb_jsonl_reader_line(&r, v), (long long)i + 1);
		if (i % 7 == 6)
			json_decref(update(&r));
	}
	CBT_EQ_LL(read_rc(&r, &v, &err), CB_DONE);
	close_reader(&r);
	for (i = 0; i < 50; i++)
		json_decref(src[i]);
}

static void test_options(void)
{
	cb_jsonl_options o = CB_JSONL_OPTIONS_INIT;
	cb_jsonl_writer_options wo = CB_JSONL_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_reader r;
	cb_writer w;

	CBT_FAILS_WITH(CB_EINVAL, cb_jsonl_reader_new(&r, &o, &err), &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_jsonl_writer_new(&w, &wo, &err), &err);
	o.path = "x";
	o.version = 2;
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_jsonl_reader_new(&r, &o, &err), &err);
	o.version = CB_JSONL_OPTIONS_VERSION;
	o.path = path_of("nope.jsonl");
	cb_error_clear(&err);
	CBT_PASS_FATAL(cb_jsonl_reader_new(&r, &o, &err), &err);
	{
		struct cb_step_context sc = step(1);

		CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &sc, NULL, &err), &err);
		CBT_CONTAINS(err.message, "nope.jsonl: cannot open");
	}
	r.free(r.state);
}

/* ---- suite --------------------------------------------------------------- */

static void remove_dir(const char *path)
{
	char file[4400];
	struct dirent *de;
	DIR *d = opendir(path);

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		unlink(file);
	}
	closedir(d);
	rmdir(path);
}

static int init(void)
{
	snprintf(dir, sizeof(dir), "%s/jsonl_XXXXXX", cbt_tmpdir());
	if (!mkdtemp(dir)) {
		fprintf(stderr, "cannot create a directory under %s: %s\n", cbt_tmpdir(),
			strerror(errno));
		return -1;
	}
	return 0;
}

static int clean(void)
{
	if (dir[0])
		remove_dir(dir);
	return 0;
}

static const CU_TestInfo tests[] = {
	{ "read values, blank lines, CRLF", test_read },
	{ "malformed lines name file:line:column", test_malformed },
	{ "restart and rollback", test_restart_and_rollback },
	{ "writer: values, truncation on restart", test_writer },
	{ "writer: format callback", test_writer_format },
	{ "writer to reader round trip", test_roundtrip },
	{ "options", test_options },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("jsonl", init, clean, tests);
}
