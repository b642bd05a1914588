/*
 * Unit tests for the CSV writer (writers/csv.c) and its file sink, on real
 * files in a scratch directory, driven by hand as the step engine would:
 * open, write x n, update, (rollback), close, free, with a step context on the
 * stack and no transaction. The reader's tests are in test_csv.c.
 */
#include "cbatch/readers.h"
#include "cbatch/writers.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cbtest.h"
#include "csv_kit.h"
#include "step_context.h"
#include "../../writers/file_sink.h"

/* ---- writer -------------------------------------------------------------- */

/* Items of the writer tests: a few strings, NULL ends; nfields < 0: no fields. */
struct row {
	const char *f[4];
	int nfields;
};

static int format_row(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	const struct row *r = item;
	int i;

	(void)ctx;
	if (r->nfields == -2)
		return cb_error_set(err, CB_EINVAL, "bad item");
	if (r->nfields == -3)
		return CB_ECALLBACK;
	for (i = 0; i < r->nfields; i++)
		cb_csv_row_add_str(row, r->f[i]);
	return 0;
}

static void open_writer(cb_writer *w, const cb_csv_writer_options *o, const json_t *saved)
{
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(cb_csv_writer_new(w, o, &err), &err);
	CBT_PASS_FATAL(w->open(w->state, &sc, saved, &err), &err);
}

/* write(rows) + update(); the new context (or NULL on failure). */
static json_t *chunk(cb_writer *w, const struct row *rows, size_t n)
{
	cb_error err = CB_ERROR_INIT;
	void *items[16];
	json_t *ctx = json_object();
	size_t i;

	for (i = 0; i < n; i++)
		items[i] = (void *)&rows[i];
	CBT_PASS(w->write(w->state, NULL, items, n, &err), &err);
	CBT_PASS(w->update(w->state, ctx, &err), &err);
	return ctx;
}

static void close_writer(cb_writer *w)
{
	w->close(w->state);
	w->free(w->state);
}

static void test_writer_quoting(void)
{
	static const char *hdr[] = { "id", "text", "note" };
	static const struct row rows[] = {
		{ { "1", "plain", "a,b" }, 3 },
		{ { "2", "say \"hi\"", "line\nbreak" }, 3 },
		{ { "3", "cr\rhere", "" }, 3 },
		{ { "4", NULL, " spaced " }, 3 },
	};
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	cb_writer w;

	o.path = path_of("out.csv");
	o.if_exists = CB_FILE_REPLACE; /* this test reopens over its old files */
	o.header = hdr;
	o.nheader = 3;
	o.format = format_row;
	open_writer(&w, &o, NULL);
	CBT_EXPECT_FILE(o.path, "id,text,note\n");
	json_decref(chunk(&w, rows, 4));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "id,text,note\n"
				"1,plain,\"a,b\"\n"
				"2,\"say \"\"hi\"\"\",\"line\nbreak\"\n"
				"3,\"cr\rhere\",\"\"\n"
				"4,, spaced \n");

	/* CRLF, another delimiter, everything quoted */
	o.line_end = "\r\n";
	o.delimiter = ';';
	o.quote_all = 1;
	open_writer(&w, &o, NULL);
	json_decref(chunk(&w, rows, 2));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "\"id\";\"text\";\"note\"\r\n"
				"\"1\";\"plain\";\"a,b\"\r\n"
				"\"2\";\"say \"\"hi\"\"\";\"line\nbreak\"\r\n");
}

static int format_various(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	(void)ctx;
	(void)item;
	(void)err;
	cb_csv_row_add_long(row, -42);
	cb_csv_row_addf(row, "%s=%.2f", "x;y", 1.5);
	cb_csv_row_add(row, "a\0b", 3);
	cb_csv_row_add(row, "tail-ignored", 4);
	CU_ASSERT_EQUAL(cb_csv_row_count(row), 4);
	return 0;
}

static int format_lone_null(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	(void)ctx;
	(void)item;
	(void)err;
	return cb_csv_row_add(row, NULL, 0);
}

static void test_writer_fields(void)
{
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	void *items[2] = { NULL, NULL };
	json_t *ctx;
	cb_writer w;
	size_t len;
	char *got;

	o.path = path_of("fields.csv");
	o.if_exists = CB_FILE_REPLACE; /* this test reopens over its old files */
	o.format = format_various;
	o.delimiter = ';';
	open_writer(&w, &o, NULL);
	CBT_PASS(w.write(w.state, NULL, items, 1, &err), &err);
	ctx = json_object();
	CBT_PASS(w.update(w.state, ctx, &err), &err);
	close_writer(&w);
	json_decref(ctx);
	got = cbt_slurp(o.path, &len);
	CBT_EQ_LL(len, 24);
	CU_ASSERT(got && memcmp(got, "-42;\"x;y=1.50\";a\0b;tail\n", 24) == 0);
	free(got);

	/* a row of one NULL field is not written as a blank line */
	o.format = format_lone_null;
	open_writer(&w, &o, NULL);
	CBT_PASS(w.write(w.state, NULL, items, 2, &err), &err);
	ctx = json_object();
	CBT_PASS(w.update(w.state, ctx, &err), &err);
	close_writer(&w);
	json_decref(ctx);
	CBT_EXPECT_FILE(o.path, "\"\"\n\"\"\n");
}

static void test_writer_errors(void)
{
	static const char *hdr[] = { "a", "b" };
	static const struct row rows[] = {
		{ { "1", "x" }, 2 }, { { "2" }, 1 },  { { NULL }, -2 },
		{ { NULL }, -3 },    { { NULL }, 0 },
	};
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	void *items[3];
	json_t *ctx;
	cb_writer w;
	char msg[800];

	o.path = path_of("err.csv");
	o.header = hdr;
	o.nheader = 2;
	o.format = format_row;
	open_writer(&w, &o, NULL);
	items[0] = (void *)&rows[0];
	items[1] = (void *)&rows[1];
	CBT_FAILS_WITH(CB_EINVAL, w.write(w.state, NULL, items, 2, &err), &err);
	snprintf(msg, sizeof(msg),
		 "CSV writer %s: item 2 of the chunk: 1 fields, but the header "
		 "has 2",
		 o.path);
	CBT_EQ_STR(err.message, msg);
	items[1] = (void *)&rows[2];
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, w.write(w.state, NULL, items, 2, &err), &err);
	CBT_CONTAINS(err.message, "item 2 of the chunk: bad item");
	items[1] = (void *)&rows[3];
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_ECALLBACK, w.write(w.state, NULL, items, 2, &err), &err);
	CBT_CONTAINS(err.message, "format returned CB_ECALLBACK without a message");
	/* the failed chunks left nothing behind; an item without fields writes no line */
	items[1] = (void *)&rows[4];
	items[2] = (void *)&rows[0];
	CBT_PASS(w.write(w.state, NULL, items, 3, &err), &err);
	ctx = json_object();
	CBT_PASS(w.update(w.state, ctx, &err), &err);
	json_decref(ctx);
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "a,b\n1,x\n1,x\n");

	/* bad options */
	cb_error_clear(&err);
	o.line_end = "\n\n";
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &o, &err), &err);
	o.line_end = NULL;
	o.delimiter = '\r';
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &o, &err), &err);
	o.delimiter = ',';
	o.path = NULL;
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &o, &err), &err);
}

static const struct row chunk1[] = { { { "1", "a" }, 2 }, { { "2", "b,b" }, 2 } };
static const struct row chunk2[] = { { { "3", "c" }, 2 }, { { "4", "d\nd" }, 2 } };
static const struct row chunk3[] = { { { "5", "e" }, 2 } };
static const char *const two_cols[] = { "id", "v" };

static void test_writer_truncate(void)
{
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;
	json_t *ctx1, *ctx2, *ctx3;
	cb_writer w;
	char msg[800];

	o.path = path_of("trunc.csv");
	o.if_exists = CB_FILE_REPLACE; /* this test reopens over its old files */
	o.header = two_cols;
	o.nheader = 2;
	o.format = format_row;
	/* an old file is replaced on a first run */
	write_str(o.path, "old content that must go\n");
	open_writer(&w, &o, NULL);
	ctx1 = chunk(&w, chunk1, 2);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx1, "offset")), 17);
	ctx2 = chunk(&w, chunk2, 2);
	/* chunk 2 reached the file, but its COMMIT never happened: the process dies */
	close_writer(&w);
	CBT_EQ_LL(file_size(o.path), json_integer_value(json_object_get(ctx2, "offset")));
	json_decref(ctx2);

	/* restart from the committed context: the file ends exactly after chunk 1 */
	open_writer(&w, &o, ctx1);
	CBT_EQ_LL(file_size(o.path), 17);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n");
	ctx2 = chunk(&w, chunk2, 2);
	ctx3 = chunk(&w, chunk3, 1);
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n3,c\n4,\"d\nd\"\n5,e\n");
	json_decref(ctx2);

	/* restart at the very end changes nothing */
	open_writer(&w, &o, ctx3);
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n3,c\n4,\"d\nd\"\n5,e\n");

	/* a file shorter than the committed length, or missing, is refused */
	write_str(o.path, "id,v\n");
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, ctx1, &err), &err);
	snprintf(msg, sizeof(msg),
		 "CSV writer %s: the file (5 bytes) is shorter than its committed "
		 "length (17 bytes): it was changed since",
		 o.path);
	CBT_EQ_STR(err.message, msg);
	unlink(o.path);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, ctx1, &err), &err);
	CBT_CONTAINS(err.message, "cannot resume at offset 17: the file is missing");
	w.free(w.state);
	json_decref(ctx1);
	json_decref(ctx3);
}

static void test_writer_sigkill(void)
{
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	json_error_t jerr;
	json_t *ctx1;
	cb_writer w;
	pid_t pid;
	int status = 0;
	const char *ctx_path = path_of("kill.ctx");

	o.path = path_of("kill.csv");
	o.header = two_cols;
	o.nheader = 2;
	o.format = format_row;
	o.fsync = 1;
	unlink(ctx_path);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* the child: chunk 1 commits (its context is saved), chunk 2 reaches the
		 * file, and the process is killed before chunk 2's COMMIT */
		cb_error err = CB_ERROR_INIT;
		struct cb_step_context sc = step(2);
		void *items[2] = { (void *)&chunk1[0], (void *)&chunk1[1] };
		json_t *ctx = json_object();

		if (cb_csv_writer_new(&w, &o, &err) < 0 || w.open(w.state, &sc, NULL, &err) < 0 ||
		    w.write(w.state, NULL, items, 2, &err) < 0 ||
		    w.update(w.state, ctx, &err) < 0 || json_dump_file(ctx, ctx_path, 0) < 0)
			_exit(3);
		items[0] = (void *)&chunk2[0];
		items[1] = (void *)&chunk2[1];
		if (w.write(w.state, NULL, items, 2, &err) < 0 || w.update(w.state, ctx, &err) < 0)
			_exit(4);
		raise(SIGKILL);
		_exit(5);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_FATAL(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n3,c\n4,\"d\nd\"\n");
	ctx1 = json_load_file(ctx_path, 0, &jerr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx1);
	/* the restart truncates to chunk 1 and writes chunk 2 once */
	open_writer(&w, &o, ctx1);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n");
	json_decref(chunk(&w, chunk2, 2));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n3,c\n4,\"d\nd\"\n");
	json_decref(ctx1);
}

static void test_writer_writes_add_up(void)
{
	static const struct row bad[] = { { { "9", "z" }, 2 }, { { NULL }, -2 } };
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	void *items[2];
	json_t *ctx;
	cb_writer w;

	o.path = path_of("scan.csv");
	o.format = format_row;
	open_writer(&w, &o, NULL);
	/* an item-by-item pass: one write() per item, one update() */
	items[0] = (void *)&chunk1[0];
	CBT_PASS(w.write(w.state, NULL, items, 1, &err), &err);
	/* a write() that fails leaves none of its own lines, and only those */
	items[0] = (void *)&bad[0];
	items[1] = (void *)&bad[1];
	CBT_FAILS_WITH(CB_EINVAL, w.write(w.state, NULL, items, 2, &err), &err);
	items[0] = (void *)&chunk1[1];
	CBT_PASS(w.write(w.state, NULL, items, 1, &err), &err);
	ctx = json_object();
	CBT_PASS(w.update(w.state, ctx, &err), &err);
	json_decref(ctx);
	/* lines not flushed at close (their chunk never reached update) are dropped */
	items[0] = (void *)&chunk2[0];
	CBT_PASS(w.write(w.state, NULL, items, 1, &err), &err);
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "1,a\n2,\"b,b\"\n");
}

/* The rollback the engine cannot call yet (no writer hook): the file sink's. */
static void test_sink_rollback(void)
{
	cb_error err = CB_ERROR_INIT;
	cb__fsink s;
	json_t *ctx = json_object();

	CBT_PASS_FATAL(cb__fsink_init(&s, "test sink", path_of("sink.txt"), 0, NULL, 0,
				      CB_FILE_REPLACE, &err),
		       &err);
	CBT_PASS_FATAL(cb__fsink_open(&s, NULL, NULL, "H\n", 2, &err), &err);
	cb__fsink_begin_write(&s);
	cb__fsink_append(&s, "one\n", 4);
	CBT_PASS(cb__fsink_flush(&s, ctx, &err), &err);
	/* chunk 1 committed (the next write proves it); chunk 2 flushed, COMMIT failed */
	cb__fsink_begin_write(&s);
	cb__fsink_append(&s, "two\n", 4);
	CBT_PASS(cb__fsink_flush(&s, ctx, &err), &err);
	CBT_EXPECT_FILE(path_of("sink.txt"), "H\none\ntwo\n");
	cb__fsink_rollback(&s);
	CBT_EXPECT_FILE(path_of("sink.txt"), "H\none\n");
	/* the retry writes chunk 2 once */
	cb__fsink_begin_write(&s);
	cb__fsink_append(&s, "two\n", 4);
	CBT_PASS(cb__fsink_flush(&s, ctx, &err), &err);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx, "offset")), 10);
	/* a rollback before update drops the buffered lines only */
	cb__fsink_begin_write(&s);
	cb__fsink_append(&s, "three\n", 6);
	cb__fsink_rollback(&s);
	CBT_PASS(cb__fsink_flush(&s, ctx, &err), &err);
	CBT_EXPECT_FILE(path_of("sink.txt"), "H\none\ntwo\n");
	/* savepoints around the items of an item-by-item pass */
	cb__fsink_begin_write(&s);
	cb__fsink_savepoint(&s);
	cb__fsink_append(&s, "4\n", 2);
	cb__fsink_savepoint(&s);
	cb__fsink_append(&s, "5 (skipped)\n", 12);
	cb__fsink_rollback_to_savepoint(&s);
	cb__fsink_savepoint(&s);
	cb__fsink_append(&s, "6\n", 2);
	CBT_PASS(cb__fsink_flush(&s, ctx, &err), &err);
	CBT_EXPECT_FILE(path_of("sink.txt"), "H\none\ntwo\n4\n6\n");
	CBT_PASS(cb__fsink_complete(&s, &err), &err);
	cb__fsink_free(&s);
	json_decref(ctx);
}

static void test_writer_atomic(void)
{
	cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	char tmp[4300];
	json_t *ctx1;
	cb_writer w;

	o.path = path_of("atomic.csv");
	o.if_exists = CB_FILE_REPLACE; /* this test reopens over its old files */
	o.header = two_cols;
	o.nheader = 2;
	o.format = format_row;
	o.atomic = 1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", o.path);
	write_str(o.path, "previous,complete\nfile,here\n");
	open_writer(&w, &o, NULL);
	ctx1 = chunk(&w, chunk1, 2);
	json_decref(chunk(&w, chunk2, 2));
	close_writer(&w);
	/* the published name is untouched by the writer */
	CBT_EXPECT_FILE(o.path, "previous,complete\nfile,here\n");
	CBT_EXPECT_FILE(tmp, "id,v\n1,a\n2,\"b,b\"\n3,c\n4,\"d\nd\"\n");
	/* a restart truncates the temporary file as usual */
	open_writer(&w, &o, ctx1);
	CBT_EXPECT_FILE(tmp, "id,v\n1,a\n2,\"b,b\"\n");
	json_decref(chunk(&w, chunk3, 1));
	close_writer(&w);
	/* the step completed: publish */
	CBT_PASS(cb_file_publish(tmp, o.path, &err), &err);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n5,e\n");
	CBT_EQ_LL(file_size(tmp), -1);
	/* a rerun of the publishing step is harmless */
	CBT_PASS(cb_file_publish(tmp, o.path, &err), &err);
	CBT_EXPECT_FILE(o.path, "id,v\n1,a\n2,\"b,b\"\n5,e\n");
	unlink(o.path);
	CBT_FAILS_WITH(CB_EINVAL, cb_file_publish(tmp, o.path, &err), &err);
	CBT_CONTAINS(err.message, "cannot open");
	json_decref(ctx1);

	/* an explicit temporary path, which must differ */
	o.temp_path = o.path;
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &o, &err), &err);
	o.temp_path = path_of("atomic.part");
	open_writer(&w, &o, NULL);
	close_writer(&w);
	CBT_EXPECT_FILE(path_of("atomic.part"), "id,v\n");
	CBT_EQ_LL(file_size(o.path), -1);
}

/* CSV to CSV: the reader's records through the default format. */
static void test_roundtrip(void)
{
	static const char src[] = "id,name,note\n"
				  "1,\"Smith, J\",\n"
				  "2,\"say \"\"x\"\"\",\"\"\n"
				  "3,\"two\r\nlines\",plain\n";
	cb_csv_options ro = CB_CSV_OPTIONS_INIT;
	cb_csv_writer_options wo = CB_CSV_WRITER_OPTIONS_INIT;
	static const char *hdr[] = { "id", "name", "note" };
	cb_error err = CB_ERROR_INIT;
	void *items[8];
	size_t n = 0;
	cb_reader r;
	cb_writer w;
	json_t *ctx;

	write_str(path_of("src.csv"), src);
	ro.path = path_of("src.csv");
	ro.header = 1;
	open_reader(&r, &ro, NULL);
	while (n < 8 && r.read(r.state, NULL, &items[n], &err) == 0)
		n++;
	CBT_EQ_LL(n, 3);
	wo.path = path_of("copy.csv");
	wo.header = hdr;
	wo.nheader = 3;
	wo.line_end = "\r\n";
	open_writer(&w, &wo, NULL);
	CBT_PASS(w.write(w.state, NULL, items, n, &err), &err);
	ctx = json_object();
	CBT_PASS(w.update(w.state, ctx, &err), &err);
	json_decref(ctx);
	close_writer(&w);
	close_reader(&r);
	CBT_EXPECT_FILE(wo.path, "id,name,note\r\n"
				 "1,\"Smith, J\",\r\n"
				 "2,\"say \"\"x\"\"\",\"\"\r\n"
				 "3,\"two\r\nlines\",plain\r\n");
}

static const CU_TestInfo tests[] = {
	{ "writer quoting", test_writer_quoting },
	{ "writer fields", test_writer_fields },
	{ "writer errors", test_writer_errors },
	{ "writer truncates to the committed offset", test_writer_truncate },
	{ "writer after SIGKILL between update and commit", test_writer_sigkill },
	{ "writer: writes add up until update", test_writer_writes_add_up },
	{ "file sink rollback", test_sink_rollback },
	{ "writer atomic mode", test_writer_atomic },
	{ "CSV to CSV round trip", test_roundtrip },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("csv_writer", init, clean, tests);
}
