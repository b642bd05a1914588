/*
 * File writer paths: template expansion (cb_file_path_expand), the absolute
 * path fixed at the first open and reused on restart, and what a first open
 * does with a file that exists (if_exists), through the JSON lines and CSV
 * writers on real files.
 */
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
static cb_params *params;

static const char *path_of(const char *name)
{
	static char buf[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static struct cb_step_context step(long long job_execution_id)
{
	struct cb_step_context sc;

	memset(&sc, 0, sizeof(sc));
	sc.job_name = "export";
	sc.step_name = "write";
	sc.job_execution_id = job_execution_id;
	sc.job_instance_id = 9;
	sc.step_execution_id = 77;
	sc.params = params;
	sc.chunk_size = 10;
	return sc;
}

static void expect_expansion(const char *tmpl, const char *want)
{
	struct cb_step_context sc = step(42);
	cb_error err = CB_ERROR_INIT;
	char *got = NULL;

	CBT_PASS(cb_file_path_expand(&got, tmpl, &sc, &err), &err);
	CBT_EQ_STR(got, want);
	free(got);
}

static void expect_refused(const char *tmpl, const char *why)
{
	struct cb_step_context sc = step(42);
	cb_error err = CB_ERROR_INIT;
	char *got = (char *)1;

	CBT_FAILS_WITH(CB_EINVAL, cb_file_path_expand(&got, tmpl, &sc, &err), &err);
	CU_ASSERT_PTR_NULL(got);
	CBT_CONTAINS(err.message, why);
	CBT_CONTAINS(err.message, tmpl);
}

static void test_expand_placeholders(void)
{
	cb_error err = CB_ERROR_INIT;
	char *got = NULL;

	expect_expansion("out/{job}-{step}.csv", "out/export-write.csv");
	expect_expansion("/data/{job_execution}/{step_execution}.jsonl", "/data/42/77.jsonl");
	expect_expansion("out/{job_instance}-{job_execution}.csv", "out/9-42.csv");
	expect_expansion("x_{param:day}_{param:n}_{param:label}",
			 "x_2026-06-30_7_caf\xc3\xa9 au lait");
	expect_expansion("{{literal}} {job}", "{literal} export");
	expect_expansion("plain.csv", "plain.csv");
	/* a value may hold dots, just not lead with one */
	expect_expansion("{param:dotted}", "v1.2..3");
	/* no step context: only a template without placeholders */
	CBT_PASS(cb_file_path_expand(&got, "a/b.csv", NULL, &err), &err);
	CBT_EQ_STR(got, "a/b.csv");
	free(got);
	got = NULL;
	CBT_FAILS_WITH(CB_EINVAL, cb_file_path_expand(&got, "{job}.csv", NULL, &err), &err);
	CBT_CONTAINS(err.message, "needs a step context");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_file_path_expand(&got, "", NULL, &err), &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_file_path_expand(NULL, "a", NULL, &err), &err);
}

static void test_expand_errors(void)
{
	expect_refused("out/{param:missing}.csv", "parameter 'missing' is not set");
	expect_refused("out/{jobb}.csv", "unknown placeholder {jobb}");
	expect_refused("out/{param:}.csv", "unknown placeholder {param:}");
	expect_refused("out/{job.csv", "is not closed");
	expect_refused("out/job}.csv", "closes nothing");
}

static void test_expand_hostile_values(void)
{
	/* No value may steer the file outside the template's directory. */
	expect_refused("out/{param:up}/x.csv", "starts with '.'");
	expect_refused("out/{param:dot}{param:dot}/x.csv", "starts with '.'");
	expect_refused("out/{param:slash}.csv", "contains '/'");
	expect_refused("out/{param:abs}.csv", "contains '/'");
	expect_refused("out/.{param:empty}./x", "it is empty");
	expect_refused("out/{param:newline}.csv", "control character");
	expect_refused("out/{param:hidden}", "starts with '.'");
}

static void open_jsonl(cb_writer *w, const cb_jsonl_writer_options *o, long long exec,
		       const json_t *saved, int want)
{
	struct cb_step_context sc = step(exec);
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(cb_jsonl_writer_new(w, o, &err), &err);
	if (want == 0) {
		CBT_PASS_FATAL(w->open(w->state, &sc, saved, &err), &err);
	} else {
		CBT_FAILS_WITH(want, w->open(w->state, &sc, saved, &err), &err);
		CBT_CONTAINS(err.message, "exists; remove it, choose another path, or set append");
	}
}

static void close_writer(cb_writer *w)
{
	w->close(w->state);
	w->free(w->state);
}

/* One chunk of one value: write + update; the new context. */
static json_t *chunk(cb_writer *w, long long id)
{
	cb_error err = CB_ERROR_INIT;
	json_t *v = json_pack("{sI}", "id", (json_int_t)id);
	json_t *ctx = json_object();
	void *items[1] = { v };

	CBT_PASS(w->write(w->state, NULL, items, 1, &err), &err);
	CBT_PASS(w->update(w->state, ctx, &err), &err);
	json_decref(v);
	return ctx;
}

static void test_path_fixed_at_first_open(void)
{
	cb_jsonl_writer_options o = CB_JSONL_WRITER_OPTIONS_INIT;
	char tmpl[4200], cwd[4096], want[4400];
	json_t *ctx1, *ctx2;
	cb_writer w;

	CU_ASSERT_FATAL(getcwd(cwd, sizeof(cwd)) != NULL);
	CU_ASSERT_FATAL(mkdir(path_of("a"), 0777) == 0 && mkdir(path_of("b"), 0777) == 0);
	/* relative, resolved against the working directory of the first open */
	CU_ASSERT_FATAL(chdir(path_of("a")) == 0);
	snprintf(tmpl, sizeof(tmpl), "./run-{job_execution}.jsonl");
	o.path = tmpl;
	open_jsonl(&w, &o, 42, NULL, 0);
	ctx1 = chunk(&w, 1);
	ctx2 = chunk(&w, 2); /* never committed */
	close_writer(&w);
	snprintf(want, sizeof(want), "%s/run-42.jsonl", path_of("a"));
	CBT_EQ_STR(json_string_value(json_object_get(ctx1, "path")), want);
	CU_ASSERT_PTR_NULL(json_object_get(ctx1, "temp_path"));
	/* the restart runs elsewhere, as execution 43: same file, truncated exactly */
	CU_ASSERT_FATAL(chdir(path_of("b")) == 0);
	open_jsonl(&w, &o, 43, ctx1, 0);
	json_decref(chunk(&w, 3));
	close_writer(&w);
	CBT_EXPECT_FILE(want, "{\"id\":1}\n{\"id\":3}\n");
	CU_ASSERT(access(path_of("b/run-43.jsonl"), F_OK) != 0);
	CU_ASSERT(access(path_of("b/run-42.jsonl"), F_OK) != 0);
	CU_ASSERT_FATAL(chdir(cwd) == 0);
	json_decref(ctx1);
	json_decref(ctx2);

	/* a saved path that is not absolute is refused */
	{
		struct cb_step_context sc = step(1);
		cb_error err = CB_ERROR_INIT;
		json_t *bad = json_pack("{sIss}", "offset", (json_int_t)0, "path", "rel.jsonl");

		CBT_PASS_FATAL(cb_jsonl_writer_new(&w, &o, &err), &err);
		CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, bad, &err), &err);
		CBT_CONTAINS(err.message, "is not an absolute path");
		w.free(w.state);
		json_decref(bad);
	}
}

static void test_atomic_paths_saved(void)
{
	cb_jsonl_writer_options o = CB_JSONL_WRITER_OPTIONS_INIT;
	char tmpl[4200], ttmpl[4200], want[4400];
	json_t *ctx1;
	cb_writer w;

	snprintf(tmpl, sizeof(tmpl), "%s/atomic-{job_execution}.jsonl", dir);
	snprintf(ttmpl, sizeof(ttmpl), "%s/atomic-{job_execution}.part", dir);
	o.path = tmpl;
	o.temp_path = ttmpl;
	o.atomic = 1;
	open_jsonl(&w, &o, 5, NULL, 0);
	ctx1 = chunk(&w, 1);
	close_writer(&w);
	snprintf(want, sizeof(want), "%s/atomic-5.jsonl", dir);
	CBT_EQ_STR(json_string_value(json_object_get(ctx1, "path")), want);
	snprintf(want, sizeof(want), "%s/atomic-5.part", dir);
	CBT_EQ_STR(json_string_value(json_object_get(ctx1, "temp_path")), want);
	/* the restart (execution 6) continues the same temporary file and publishes it */
	open_jsonl(&w, &o, 6, ctx1, 0);
	json_decref(chunk(&w, 2));
	{
		cb_error err = CB_ERROR_INIT;

		CBT_PASS(w.complete(w.state, &err), &err);
	}
	close_writer(&w);
	snprintf(want, sizeof(want), "%s/atomic-5.jsonl", dir);
	CBT_EXPECT_FILE(want, "{\"id\":1}\n{\"id\":2}\n");
	CU_ASSERT(access(path_of("atomic-6.jsonl"), F_OK) != 0);
	json_decref(ctx1);
	/* a new instance that would publish over that file fails */
	o.path = want;
	o.temp_path = NULL;
	open_jsonl(&w, &o, 7, NULL, CB_EINVAL);
	w.free(w.state);
}

static void test_if_exists(void)
{
	cb_jsonl_writer_options o = CB_JSONL_WRITER_OPTIONS_INIT;
	cb_csv_writer_options co = CB_CSV_WRITER_OPTIONS_INIT;
	static const char *const hdr[] = { "id" };
	cb_error err = CB_ERROR_INIT;
	struct cb_step_context sc = step(1);
	json_t *ctx1, *ctx2;
	cb_writer w;

	/* fail (the default): the file is left alone */
	o.path = path_of("exists.jsonl");
	cbt_write_str(o.path, "{\"id\":0}\n");
	open_jsonl(&w, &o, 1, NULL, CB_EINVAL);
	w.free(w.state);
	CBT_EXPECT_FILE(o.path, "{\"id\":0}\n");
	/* replace */
	o.if_exists = CB_FILE_REPLACE;
	open_jsonl(&w, &o, 1, NULL, 0);
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "");
	/* an empty file is what a first open writes: taken over even when failing */
	o.if_exists = CB_FILE_FAIL;
	open_jsonl(&w, &o, 1, NULL, 0);
	close_writer(&w);

	/* append: offsets count from the start of the file; restart truncates exactly */
	cbt_write_str(o.path, "{\"id\":0}\n");
	o.if_exists = CB_FILE_APPEND;
	open_jsonl(&w, &o, 1, NULL, 0);
	ctx1 = chunk(&w, 1);
	CBT_EQ_LL(json_integer_value(json_object_get(ctx1, "offset")), 18);
	ctx2 = chunk(&w, 2); /* never committed */
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "{\"id\":0}\n{\"id\":1}\n{\"id\":2}\n");
	open_jsonl(&w, &o, 2, ctx1, 0);
	CBT_EXPECT_FILE(o.path, "{\"id\":0}\n{\"id\":1}\n");
	json_decref(chunk(&w, 3));
	close_writer(&w);
	CBT_EXPECT_FILE(o.path, "{\"id\":0}\n{\"id\":1}\n{\"id\":3}\n");
	json_decref(ctx1);
	json_decref(ctx2);
	/* a file without a final line break cannot be appended to */
	cbt_write_str(o.path, "{\"id\":0}");
	CBT_PASS_FATAL(cb_jsonl_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "does not end with a line break");
	w.free(w.state);
	cb_error_clear(&err);
	/* a directory is not a file */
	o.path = dir;
	CBT_PASS_FATAL(cb_jsonl_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "is not a regular file");
	w.free(w.state);
	cb_error_clear(&err);

	/* CSV: a file holding only the header is taken over; append writes no second header */
	co.path = path_of("exists.csv");
	co.header = hdr;
	co.nheader = 1;
	cbt_write_str(co.path, "id\n");
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &co, &err), &err);
	CBT_PASS(w.open(w.state, &sc, NULL, &err), &err);
	close_writer(&w);
	cbt_write_str(co.path, "id\n1\n");
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &co, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "exists; remove it, choose another path, or set append");
	w.free(w.state);
	cb_error_clear(&err);
	co.if_exists = CB_FILE_APPEND;
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &co, &err), &err);
	CBT_PASS(w.open(w.state, &sc, NULL, &err), &err);
	close_writer(&w);
	CBT_EXPECT_FILE(co.path, "id\n1\n");
	/* appending to an empty (or missing) file writes the header */
	unlink(co.path);
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &co, &err), &err);
	CBT_PASS(w.open(w.state, &sc, NULL, &err), &err);
	close_writer(&w);
	CBT_EXPECT_FILE(co.path, "id\n");

	/* a bad if_exists, and a version 1 options struct (no if_exists: fail) */
	co.if_exists = 9;
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &co, &err), &err);
	cb_error_clear(&err);
	co.version = 1;
	co.path = path_of("exists.csv");
	CBT_PASS_FATAL(cb_csv_writer_new(&w, &co, &err), &err);
	CBT_PASS(w.open(w.state, &sc, NULL, &err), &err); /* holds only the header */
	close_writer(&w);
	co.version = 3;
	CBT_FAILS_WITH(CB_EINVAL, cb_csv_writer_new(&w, &co, &err), &err);
}

static void remove_tree(const char *path)
{
	char file[4400];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(path);

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		if (lstat(file, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(file);
		else
			unlink(file);
	}
	closedir(d);
	rmdir(path);
}

static int init(void)
{
	cb_error err = CB_ERROR_INIT;

	snprintf(dir, sizeof(dir), "%s/fpath_XXXXXX", cbt_tmpdir());
	if (!mkdtemp(dir)) {
		fprintf(stderr, "cannot create a directory under %s: %s\n", cbt_tmpdir(),
			strerror(errno));
		return -1;
	}
	if (cb_params_new(&params, &err) < 0 ||
	    cb_params_parse_arg(params, "day:date=2026-06-30", &err) < 0 ||
	    cb_params_add_long(params, "n", 7, 1, &err) < 0 ||
	    cb_params_add_string(params, "label", "caf\xc3\xa9 au lait", 1, &err) < 0 ||
	    cb_params_add_string(params, "dotted", "v1.2..3", 1, &err) < 0 ||
	    cb_params_add_string(params, "up", "..", 1, &err) < 0 ||
	    cb_params_add_string(params, "dot", ".", 1, &err) < 0 ||
	    cb_params_add_string(params, "slash", "a/../../etc", 1, &err) < 0 ||
	    cb_params_add_string(params, "abs", "/etc/passwd", 1, &err) < 0 ||
	    cb_params_add_string(params, "empty", "", 1, &err) < 0 ||
	    cb_params_add_string(params, "newline", "a\nb", 1, &err) < 0 ||
	    cb_params_add_string(params, "hidden", ".bashrc", 1, &err) < 0) {
		fprintf(stderr, "params: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int clean(void)
{
	cb_params_free(params);
	if (dir[0])
		remove_tree(dir);
	return 0;
}

static const CU_TestInfo tests[] = {
	{ "expand: every placeholder", test_expand_placeholders },
	{ "expand: errors name the template", test_expand_errors },
	{ "expand: hostile values are refused", test_expand_hostile_values },
	{ "path fixed at the first open, reused on restart", test_path_fixed_at_first_open },
	{ "atomic mode saves both paths", test_atomic_paths_saved },
	{ "if_exists: fail, replace, append", test_if_exists },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("file_path", init, clean, tests);
}
