/* The test harness: runner, assertions, database and process helpers. */
#include "cbtest.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/TestRun.h>

#define RUN_HINT                                                                                   \
	"run the tests through ctest (e.g. `bash scripts/test.sh`, or `ctest -R integration` in "  \
	"the build directory), which starts the throwaway cluster (scripts/pg-cluster.sh) and "    \
	"sets the CBATCH_TEST_* variables"

/* ---- failures ------------------------------------------------------------ */

/* Copy @src to @dst as one line: newlines and tabs become spaces, trailing ones go. */
static void one_line(char *dst, size_t dstsz, const char *src)
{
	size_t n = 0;

	if (dstsz == 0)
		return;
	for (; src && *src && n + 1 < dstsz; src++)
		dst[n++] = (*src == '\n' || *src == '\r' || *src == '\t') ? ' ' : *src;
	while (n > 0 && dst[n - 1] == ' ')
		n--;
	dst[n] = '\0';
}

static void vfailf(const char *file, int line, int fatal, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fflush(stdout);
	fprintf(stderr, "\n%s:%d: %s\n", file, line, msg);
	fflush(stderr);
	/*
	 * CUnit can record a failure only inside a test (it asserts that one is
	 * running). Elsewhere, as in suite init or cleanup, the message above is
	 * all there is, and the caller's error return fails the suite. CUnit
	 * copies the message, so a stack buffer is fine.
	 */
	if (CU_get_current_test() == NULL)
		return;
	CU_assertImplementation(CU_FALSE, (unsigned int)line, msg, file, "",
				fatal ? CU_TRUE : CU_FALSE);
}

void cbt__failf(const char *file, int line, int fatal, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfailf(file, line, fatal, fmt, ap);
	va_end(ap);
}

static void passf(const char *file, int line, const char *what)
{
	if (CU_get_current_test() != NULL)
		CU_assertImplementation(CU_TRUE, (unsigned int)line, what, file, "", CU_FALSE);
}

/* ---- runner -------------------------------------------------------------- */

/*
 * The program's arguments, for --list and --run. glibc calls the functions of
 * .init_array with main's argc and argv, so the harness sees them without every
 * test's main having to pass them on (most are `int main(void)`).
 */
static int cbt_argc;
static char **cbt_argv;

static void capture_args(int argc, char **argv, char **envp)
{
	(void)envp;
	cbt_argc = argc;
	cbt_argv = argv;
}
__attribute__((used, section(".init_array"))) static void (*const cbt_capture_args)(
	int, char **, char **) = capture_args;

/* What the arguments ask of the runner. */
struct cbt_request {
	int list;             /* --list: print the case names, run nothing */
	const char *runs[64]; /* --run NAME (repeatable): only these cases, in this order */
	size_t nruns;
};

static int parse_request(const char *name, struct cbt_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	for (int i = 1; i < cbt_argc; i++) {
		if (strcmp(cbt_argv[i], "--list") == 0) {
			rq->list = 1;
		} else if (strcmp(cbt_argv[i], "--run") == 0) {
			if (i + 1 >= cbt_argc ||
			    rq->nruns == sizeof(rq->runs) / sizeof(rq->runs[0])) {
				fprintf(stderr, "%s: --run needs a case name (see --list)\n", name);
				return -1;
			}
			rq->runs[rq->nruns++] = cbt_argv[++i];
		}
		/* Anything else belongs to the test program itself (e.g. test_csv's case). */
	}
	return 0;
}

/*
 * A case's name as --list prints it and ctest names it: lower case, every run of
 * other characters than [a-z0-9] one '_' (CUnit's names are sentences, with
 * spaces, commas and semicolons that a shell or a CMake list would split).
 * Prefixed with "<suite>." when the program has several suites.
 */
static void case_slug(char *out, size_t outsz, const char *suite, const char *test)
{
	size_t n = 0;
	int gap = 0;

	if (suite) {
		case_slug(out, outsz, NULL, suite);
		n = strlen(out);
		if (n + 1 < outsz)
			out[n++] = '.';
	}
	for (const char *c = test; *c && n + 1 < outsz; c++) {
		char ch = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
			if (gap && n > 0 && out[n - 1] != '.' && n + 2 < outsz)
				out[n++] = '_';
			out[n++] = ch;
			gap = 0;
		} else {
			gap = 1;
		}
	}
	out[n] = '\0';
}

/* Does --run @p want name this case (by its slug or its exact CUnit name)? */
static int case_named(const char *want, const char *suite, const char *test)
{
	char slug[512];

	case_slug(slug, sizeof(slug), suite, test);
	if (strcmp(want, slug) == 0 || strcmp(want, test) == 0)
		return 1;
	if (suite) {
		size_t sl = strlen(suite);

		return strncmp(want, suite, sl) == 0 && want[sl] == '.' &&
		       strcmp(want + sl + 1, test) == 0;
	}
	return 0;
}

/* Wall time per case: CUnit's own summary reports CPU time, which says nothing
 * about tests that mostly wait for other processes. */
static double case_started;
static double run_started;

/* The suites' own setup and teardown, which the timing wraps (cbt_main_suites). */
static const CU_SuiteInfo *timed_suites;

static const CU_SuiteInfo *current_suite_info(void)
{
	CU_pSuite s = CU_get_current_suite();

	for (const CU_SuiteInfo *si = timed_suites; s && si && si->pName; si++)
		if (strcmp(si->pName, s->pName) == 0)
			return si;
	return NULL;
}

static void case_setup(void)
{
	const CU_SuiteInfo *si = current_suite_info();

	case_started = cbt_now();
	if (si && si->pSetUpFunc)
		si->pSetUpFunc();
}

static void case_teardown(void)
{
	const CU_SuiteInfo *si = current_suite_info();

	if (si && si->pTearDownFunc)
		si->pTearDownFunc();
	/* Printed before CUnit's "passed"/"FAILED" on the test's line. */
	printf("[%.2f s] ", cbt_now() - case_started);
	fflush(stdout);
}

/* Run what is registered, report, clean up. @name labels the final line. */
static int run_registered(const char *name)
{
	unsigned int suites_failed, tests_run, tests_failed, failures, records;
	int ok;

	CU_basic_set_mode(CU_BRM_VERBOSE);
	run_started = cbt_now();
	if (CU_basic_run_tests() != CUE_SUCCESS)
		fprintf(stderr, "%s: CUnit: %s\n", name, CU_get_error_msg());

	/* CUnit counts failed suite init/cleanup apart from failed tests. */
	suites_failed = CU_get_number_of_suites_failed();
	tests_run = CU_get_number_of_tests_run();
	tests_failed = CU_get_number_of_tests_failed();
	failures = CU_get_number_of_failures();
	records = CU_get_number_of_failure_records();
	ok = suites_failed == 0 && tests_failed == 0 && failures == 0 && records == 0 &&
	     CU_get_error() == CUE_SUCCESS;
	printf("\n%s: %s: %u test(s) run, %u failed, %u failed assertion(s), "
	       "%u suite init/cleanup failure(s), %.2f s wall time\n",
	       name, ok ? "PASS" : "FAIL", tests_run, tests_failed, failures, suites_failed,
	       cbt_now() - run_started);
	fflush(stdout);
	CU_cleanup_registry();
	return ok ? 0 : 1;
}

/* Add the cases of @p tests that @p rq selects; mark each selected name found. */
static int add_tests(CU_pSuite suite, const char *suite_name, const char *qualifier,
		     const CU_TestInfo *tests, const struct cbt_request *rq, int *found)
{
	for (const CU_TestInfo *t = tests; t && t->pName; t++) {
		int take = rq->nruns == 0;

		for (size_t i = 0; i < rq->nruns; i++)
			if (case_named(rq->runs[i], qualifier, t->pName))
				take = found[i] = 1;
		if (!take)
			continue;
		if (!CU_add_test(suite, t->pName, t->pTestFunc)) {
			fprintf(stderr, "%s: cannot add test '%s': %s\n", suite_name, t->pName,
				CU_get_error_msg());
			return -1;
		}
	}
	return 0;
}

/*
 * --list: one slug per line. Two cases with the same slug could not be told
 * apart by --run or ctest, so that fails the listing (and so the build).
 */
static int list_cases(const char *name, const CU_SuiteInfo *suites, int qualify)
{
	char slug[512], other[512];
	int dup = 0;

	for (const CU_SuiteInfo *s = suites; s->pName; s++)
		for (const CU_TestInfo *t = s->pTests; t && t->pName; t++) {
			case_slug(slug, sizeof(slug), qualify ? s->pName : NULL, t->pName);
			for (const CU_SuiteInfo *s2 = suites; s2 <= s; s2++)
				for (const CU_TestInfo *t2 = s2->pTests;
				     t2 && t2->pName && !(s2 == s && t2 == t); t2++) {
					case_slug(other, sizeof(other), qualify ? s2->pName : NULL,
						  t2->pName);
					if (strcmp(slug, other) == 0) {
						fprintf(stderr, "%s: two cases named '%s'\n", name,
							slug);
						dup = 1;
					}
				}
			printf("%s\n", slug);
		}
	fflush(stdout);
	return dup ? 1 : 0;
}

static int start_registry(const char *name)
{
	/* Line-buffered, so that child processes' output interleaves sensibly. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "%s: cannot initialise CUnit: %s\n", name, CU_get_error_msg());
		return -1;
	}
	return 0;
}

static int suite_selected(const CU_SuiteInfo *s, int qualify, const struct cbt_request *rq)
{
	for (const CU_TestInfo *t = s->pTests; t && t->pName; t++)
		for (size_t i = 0; i < rq->nruns; i++)
			if (case_named(rq->runs[i], qualify ? s->pName : NULL, t->pName))
				return 1;
	return 0;
}

/* The runner of both entry points: several suites, qualified names if more than one. */
static int run_suites(const char *name, const CU_SuiteInfo *suites)
{
	struct cbt_request rq;
	int found[64] = { 0 };
	int qualify = suites[0].pName && suites[1].pName;

	if (parse_request(name, &rq) < 0)
		return 2;
	if (rq.list)
		return list_cases(name, suites, qualify);
	if (start_registry(name) < 0)
		return 1;
	timed_suites = suites;
	for (const CU_SuiteInfo *s = suites; s->pName; s++) {
		CU_pSuite suite;

		/* A suite none of whose cases is asked for is left out: no init, no cleanup. */
		if (rq.nruns > 0 && !suite_selected(s, qualify, &rq))
			continue;
		suite = CU_add_suite_with_setup_and_teardown(
			s->pName, s->pInitFunc, s->pCleanupFunc, case_setup, case_teardown);
		if (!suite) {
			fprintf(stderr, "%s: cannot add suite '%s': %s\n", name, s->pName,
				CU_get_error_msg());
			CU_cleanup_registry();
			return 1;
		}
		if (add_tests(suite, s->pName, qualify ? s->pName : NULL, s->pTests, &rq, found) <
		    0) {
			CU_cleanup_registry();
			return 1;
		}
	}
	for (size_t i = 0; i < rq.nruns; i++)
		if (!found[i]) {
			fprintf(stderr, "%s: no case named '%s' (see --list)\n", name, rq.runs[i]);
			CU_cleanup_registry();
			return 1;
		}
	return run_registered(name);
}

int cbt_main(const char *suite_name, CU_InitializeFunc init, CU_CleanupFunc clean,
	     const CU_TestInfo *tests)
{
	const CU_SuiteInfo suites[] = {
		{ suite_name, init, clean, NULL, NULL, (CU_TestInfo *)tests },
		CU_SUITE_INFO_NULL,
	};

	return run_suites(suite_name, suites);
}

int cbt_main_suites(const char *name, const CU_SuiteInfo *suites)
{
	return run_suites(name, suites);
}

/* ---- assertions ---------------------------------------------------------- */

static const char *errmsg(const cb_error *err)
{
	return (err && err->message[0]) ? err->message : "(no message in the cb_error)";
}

void cbt__pass(int rc, const cb_error *err, const char *expr, const char *file, int line, int fatal)
{
	if (rc >= 0) {
		passf(file, line, expr);
		return;
	}
	cbt__failf(file, line, fatal, "%s returned %d (%s)%s%s: %s", expr, rc, cb_strcode(rc),
		   (err && err->sqlstate[0]) ? " SQLSTATE " : "",
		   (err && err->sqlstate[0]) ? err->sqlstate : "", errmsg(err));
}

void cbt__fails_with(int want, int rc, const cb_error *err, const char *expr, const char *file,
		     int line)
{
	if (rc == want) {
		passf(file, line, expr);
		return;
	}
	cbt__failf(file, line, 0, "%s returned %d (%s), expected %d (%s): %s", expr, rc,
		   cb_strcode(rc), want, cb_strcode(want), rc < 0 ? errmsg(err) : "(no error)");
}

void cbt__eq_ll(long long a, long long b, const char *as, const char *bs, const char *file,
		int line)
{
	if (a == b) {
		passf(file, line, as);
		return;
	}
	cbt__failf(file, line, 0, "%s == %s: %lld != %lld", as, bs, a, b);
}

void cbt__eq_str(const char *a, const char *b, const char *as, const char *bs, const char *file,
		 int line)
{
	if ((a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0)) {
		passf(file, line, as);
		return;
	}
	cbt__failf(file, line, 0, "%s == %s: \"%s\" != \"%s\"", as, bs, a ? a : "(null)",
		   b ? b : "(null)");
}

void cbt__contains(const char *hay, const char *needle, const char *hays, const char *file,
		   int line)
{
	if (hay && needle && strstr(hay, needle)) {
		passf(file, line, hays);
		return;
	}
	cbt__failf(file, line, 0, "%s does not contain \"%s\": \"%s\"", hays,
		   needle ? needle : "(null)", hay ? hay : "(null)");
}

/* ---- environment --------------------------------------------------------- */

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return (v && *v) ? v : fallback;
}

static const char *required_bin(const char *var, const char *missing)
{
	const char *v = getenv(var);

	if (v && *v)
		return v;
	cbt__failf(__FILE__, __LINE__, 0, "%s is not set: %s", var, RUN_HINT);
	return missing;
}

const char *cbt_examples_bin(void)
{
	return required_bin("CBATCH_TEST_EXAMPLES", "/nonexistent/CBATCH_TEST_EXAMPLES-is-unset");
}

const char *cbt_cli_bin(void)
{
	return required_bin("CBATCH_TEST_CLI", "/nonexistent/CBATCH_TEST_CLI-is-unset");
}

const char *cbt_source_dir(void)
{
	return env_or("CBATCH_TEST_SOURCE_DIR", ".");
}

const char *cbt_tmpdir(void)
{
	/* Absolute, once: tests change directory, and the file writers report
	 * the absolute paths they resolved (a relative one would then differ). */
	static char abs_dir[PATH_MAX];
	const char *d = env_or("CBATCH_TEST_TMPDIR", env_or("TMPDIR", "/tmp"));

	if (!abs_dir[0] && (d[0] == '/' || !realpath(d, abs_dir)))
		snprintf(abs_dir, sizeof(abs_dir), "%s", d);
	return abs_dir;
}

/* ---- database ------------------------------------------------------------ */

/* Append ` key=value` to a conninfo, quoting the value when it needs it. */
static int append_kv(char *out, size_t outsz, size_t *len, const char *key, const char *val)
{
	int quote = *val == '\0';
	size_t n = *len;

	for (const char *p = val; *p; p++)
		if (*p == ' ' || *p == '\'' || *p == '\\' || *p == '\t' || *p == '\n')
			quote = 1;
	n += (size_t)snprintf(out + n, n < outsz ? outsz - n : 0, "%s%s=%s", n ? " " : "", key,
			      quote ? "'" : "");
	for (const char *p = val; *p; p++) {
		if (quote && (*p == '\'' || *p == '\\')) {
			if (n + 1 < outsz)
				out[n] = '\\';
			n++;
		}
		if (n + 1 < outsz)
			out[n] = *p;
		n++;
	}
	if (quote) {
		if (n + 1 < outsz)
			out[n] = '\'';
		n++;
	}
	if (n >= outsz) {
		if (outsz)
			out[outsz - 1] = '\0';
		return -1;
	}
	out[n] = '\0';
	*len = n;
	return 0;
}

/* The test cluster's conninfo for @dbname, from the CBATCH_TEST_PG* variables. */
static int test_conninfo(const char *file, int line, char *out, size_t outsz, const char *dbname)
{
	const char *host = getenv("CBATCH_TEST_PGHOST");
	size_t len = 0;

	if (outsz)
		out[0] = '\0';
	if (!host || !*host) {
		cbt__failf(file, line, 0, "CBATCH_TEST_PGHOST is not set: %s", RUN_HINT);
		return -1;
	}
	if (append_kv(out, outsz, &len, "host", host) < 0 ||
	    append_kv(out, outsz, &len, "port", env_or("CBATCH_TEST_PGPORT", "5432")) < 0 ||
	    append_kv(out, outsz, &len, "user", env_or("CBATCH_TEST_PGUSER", "postgres")) < 0 ||
	    append_kv(out, outsz, &len, "dbname", dbname) < 0) {
		cbt__failf(file, line, 0, "conninfo buffer of %zu bytes is too small", outsz);
		return -1;
	}
	return 0;
}

/* A result's error as one line: "SQLSTATE message (detail)". */
static void result_error(char *why, size_t whysz, const PGresult *res, const PGconn *conn)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	char buf[1024];

	if (state && primary) {
		snprintf(buf, sizeof(buf), "%s %s%s%s%s", state, primary, detail ? " (" : "",
			 detail ? detail : "", detail ? ")" : "");
		one_line(why, whysz, buf);
		return;
	}
	one_line(why, whysz, res ? PQresultErrorMessage(res) : "");
	if (!why[0])
		one_line(why, whysz, PQerrorMessage(conn));
	if (!why[0])
		one_line(why, whysz, "unexpected result status");
}

/* Connect without recording anything; the caller reports. */
static PGconn *try_connect(const char *conninfo, char *why, size_t whysz)
{
	PGconn *conn = PQconnectdb(conninfo);

	if (conn && PQstatus(conn) == CONNECTION_OK)
		return conn;
	one_line(why, whysz, conn ? PQerrorMessage(conn) : "out of memory");
	PQfinish(conn);
	return NULL;
}

PGconn *cbt__connect(const char *file, int line, const char *conninfo)
{
	char why[1024];
	PGconn *conn;

	if (!conninfo || !*conninfo) {
		cbt__failf(file, line, 1, "cbt_connect: empty conninfo (did cbt_db_create fail?)");
		return NULL;
	}
	conn = try_connect(conninfo, why, sizeof(why));
	if (!conn)
		cbt__failf(file, line, 1, "cannot connect to \"%s\": %s", conninfo, why);
	return conn;
}

/* Run @sql; on failure copy the server's message to @why. */
static int run_sql(PGconn *conn, const char *sql, int nparams, const char *const *params, char *why,
		   size_t whysz)
{
	PGresult *res;
	int rc = 0;

	res = nparams ? PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0) :
			PQexec(conn, sql);
	switch (PQresultStatus(res)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
	case PGRES_EMPTY_QUERY:
		break;
	default:
		result_error(why, whysz, res, conn);
		rc = -1;
	}
	PQclear(res);
	return rc;
}

int cbt__db_create(const char *file, int line, char *out, size_t outsz, const char *prefix)
{
	static unsigned counter;
	char admin[CBT_CONNINFO_MAX], name[64], sql[128], why[1024];
	unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
	PGconn *conn;
	size_t i;
	int rc;

	if (outsz)
		out[0] = '\0';
	/* Identifiers are at most 63 bytes: keep the prefix to 40. */
	for (i = 0; prefix && prefix[i] && i < 40; i++) {
		char c = prefix[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		name[i] = ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') ? c : '_';
	}
	if (i == 0)
		name[i++] = 't';
	snprintf(name + i, sizeof(name) - i, "_%ld_%u", (long)getpid(), n);

	if (test_conninfo(file, line, admin, sizeof(admin), "postgres") < 0 ||
	    test_conninfo(file, line, out, outsz, name) < 0)
		return -1;
	conn = try_connect(admin, why, sizeof(why));
	if (!conn) {
		cbt__failf(file, line, 0, "cannot connect to the test cluster (\"%s\"): %s; %s",
			   admin, why, RUN_HINT);
		if (outsz)
			out[0] = '\0';
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", name);
	rc = run_sql(conn, sql, 0, NULL, why, sizeof(why));
	PQfinish(conn);
	if (rc < 0) {
		cbt__failf(file, line, 0, "%s: %s", sql, why);
		if (outsz)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

void cbt__db_drop(const char *file, int line, const char *conninfo)
{
	PQconninfoOption *opts, *o;
	const char *keys[40], *vals[40];
	const char *dbname = NULL;
	char why[1024], sql[160];
	PGconn *conn;
	int n = 0;

	if (!conninfo || !*conninfo)
		return;
	opts = PQconninfoParse(conninfo, NULL);
	if (!opts) {
		cbt__failf(file, line, 0, "cbt_db_drop: cannot parse conninfo \"%s\"", conninfo);
		return;
	}
	/* The same server and user, but the maintenance database. */
	for (o = opts; o->keyword && n < 38; o++) {
		if (!o->val)
			continue;
		if (strcmp(o->keyword, "dbname") == 0) {
			dbname = o->val;
			continue;
		}
		keys[n] = o->keyword;
		vals[n++] = o->val;
	}
	keys[n] = "dbname";
	vals[n++] = "postgres";
	keys[n] = NULL;
	vals[n] = NULL;

	if (!dbname || !strcmp(dbname, "postgres") || !strcmp(dbname, "template0") ||
	    !strcmp(dbname, "template1") || strlen(dbname) > 63 || strchr(dbname, '"')) {
		cbt__failf(file, line, 0, "cbt_db_drop: refusing to drop database \"%s\"",
			   dbname ? dbname : "(none)");
		PQconninfoFree(opts);
		return;
	}
	conn = PQconnectdbParams(keys, vals, 0);
	if (!conn || PQstatus(conn) != CONNECTION_OK) {
		one_line(why, sizeof(why), conn ? PQerrorMessage(conn) : "out of memory");
		cbt__failf(file, line, 0, "cbt_db_drop: cannot connect to drop \"%s\": %s", dbname,
			   why);
		goto done;
	}
	/* Sessions left by killed children would block the drop. */
	if (run_sql(conn,
		    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
		    "WHERE datname = $1 AND pid <> pg_backend_pid()",
		    1, &dbname, why, sizeof(why)) < 0)
		cbt__failf(file, line, 0, "cbt_db_drop: terminating sessions on \"%s\": %s", dbname,
			   why);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", dbname);
	if (run_sql(conn, sql, 0, NULL, why, sizeof(why)) < 0)
		cbt__failf(file, line, 0, "%s: %s", sql, why);
done:
	PQfinish(conn);
	PQconninfoFree(opts);
}

int cbt__exec(const char *file, int line, PGconn *conn, const char *sql)
{
	char why[1024];

	if (!conn) {
		cbt__failf(file, line, 0, "cbt_exec without a connection: %s", sql);
		return -1;
	}
	if (run_sql(conn, sql, 0, NULL, why, sizeof(why)) < 0) {
		cbt__failf(file, line, 0, "SQL failed: %s -- in: %s", why, sql);
		return -1;
	}
	return 0;
}

/* The first row's first column, borrowed from @res; NULL after recording why not. */
static const char *first_value(const char *file, int line, PGconn *conn, PGresult *res,
			       const char *sql)
{
	char why[1024];

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		result_error(why, sizeof(why), res, conn);
		cbt__failf(file, line, 0, "query failed: %s -- in: %s", why, sql);
		return NULL;
	}
	if (PQntuples(res) < 1 || PQnfields(res) < 1) {
		cbt__failf(file, line, 0, "query returned no row: %s", sql);
		return NULL;
	}
	if (PQgetisnull(res, 0, 0)) {
		cbt__failf(file, line, 0, "query returned NULL: %s", sql);
		return NULL;
	}
	return PQgetvalue(res, 0, 0);
}

/* The first value of @p res as an integer (-1 and a failure otherwise); clears @p res. */
static long long first_ll(const char *file, int line, PGconn *conn, PGresult *res, const char *sql)
{
	const char *v = first_value(file, line, conn, res, sql);
	long long out = -1;
	char *end;

	if (v) {
		errno = 0;
		out = strtoll(v, &end, 10);
		if (errno || end == v || *end) {
			cbt__failf(file, line, 0, "query returned \"%s\", not an integer: %s", v,
				   sql);
			out = -1;
		}
	}
	PQclear(res);
	return out;
}

long long cbt__query_ll(const char *file, int line, PGconn *conn, const char *sql)
{
	if (!conn) {
		cbt__failf(file, line, 0, "cbt_query_ll without a connection: %s", sql);
		return -1;
	}
	return first_ll(file, line, conn, PQexec(conn, sql), sql);
}

#define QUERYP_MAX 8

/* Text values of the parameters @p types names (see cbt_queryp_ll) into
 * @p text / @p values; the count, or -1 after recording a failure. */
static int params_of(const char *file, int line, const char *types, va_list ap, char text[][64],
		     const char **values)
{
	int n = 0;

	/* Each parameter's C type, in order: "lld" long long, "ld" long, "d"
	 * int, "s" string; they travel as text parameters $1..$n. */
	for (const char *t = types; *t; n++) {
		size_t len = strcspn(t, " ");

		if (n == QUERYP_MAX) {
			cbt__failf(file, line, 0, "more than %d query parameters", QUERYP_MAX);
			return -1;
		}
		if (len == 3 && strncmp(t, "lld", 3) == 0) {
			snprintf(text[n], 64, "%lld", va_arg(ap, long long));
			values[n] = text[n];
		} else if (len == 2 && strncmp(t, "ld", 2) == 0) {
			snprintf(text[n], 64, "%ld", va_arg(ap, long));
			values[n] = text[n];
		} else if (len == 1 && t[0] == 'd') {
			snprintf(text[n], 64, "%d", va_arg(ap, int));
			values[n] = text[n];
		} else if (len == 1 && t[0] == 's') {
			values[n] = va_arg(ap, const char *);
		} else {
			cbt__failf(file, line, 0, "unknown query parameter type '%.*s'", (int)len,
				   t);
			return -1;
		}
		t += len;
		t += strspn(t, " ");
	}
	return n;
}

long long cbt__queryp_ll(const char *file, int line, PGconn *conn, const char *sql,
			 const char *types, ...)
{
	char text[QUERYP_MAX][64];
	const char *values[QUERYP_MAX];
	va_list ap;
	int n;

	if (!conn) {
		cbt__failf(file, line, 0, "cbt_queryp_ll without a connection: %s", sql);
		return -1;
	}
	va_start(ap, types);
	n = params_of(file, line, types, ap, text, values);
	va_end(ap);
	if (n < 0)
		return -1;
	return first_ll(file, line, conn, PQexecParams(conn, sql, n, NULL, values, NULL, NULL, 0),
			sql);
}

int cbt__wait_untilp(const char *file, int line, PGconn *conn, int timeout_ms, const char *sql,
		     const char *types, ...)
{
	double deadline = cbt_now() + timeout_ms / 1000.0;
	char text[QUERYP_MAX][64];
	const char *values[QUERYP_MAX];
	va_list ap;
	int n;

	va_start(ap, types);
	n = params_of(file, line, types, ap, text, values);
	va_end(ap);
	if (n < 0 || !conn)
		return 0;
	do {
		if (first_ll(file, line, conn,
			     PQexecParams(conn, sql, n, NULL, values, NULL, NULL, 0), sql) > 0)
			return 1;
		cbt_sleep_ms(5);
	} while (cbt_now() < deadline);
	return 0;
}

int cbt_wait_until(PGconn *conn, int timeout_ms, const char *sql)
{
	double deadline = cbt_now() + timeout_ms / 1000.0;

	do {
		if (cbt_query_ll(conn, sql) > 0)
			return 1;
		cbt_sleep_ms(5);
	} while (cbt_now() < deadline);
	return 0;
}

int cbt__query_str(const char *file, int line, PGconn *conn, const char *sql, char *out,
		   size_t outsz)
{
	PGresult *res;
	const char *v;
	int rc = -1;

	if (outsz)
		out[0] = '\0';
	if (!conn) {
		cbt__failf(file, line, 0, "cbt_query_str without a connection: %s", sql);
		return -1;
	}
	res = PQexec(conn, sql);
	v = first_value(file, line, conn, res, sql);
	if (v) {
		if (strlen(v) < outsz) {
			memcpy(out, v, strlen(v) + 1);
			rc = 0;
		} else {
			cbt__failf(file, line, 0,
				   "query result of %zu bytes does not fit in %zu: %s", strlen(v),
				   outsz, sql);
		}
	}
	PQclear(res);
	return rc;
}

void cbt_print_rows(PGconn *conn, const char *title, const char *sql)
{
	PGresult *res = conn ? PQexec(conn, sql) : NULL;

	printf("\n  %s:\n", title);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		printf("    (query failed: %s)\n", conn ? PQerrorMessage(conn) : "no connection");
	} else {
		for (int r = 0; r < PQntuples(res); r++) {
			printf("    ");
			for (int c = 0; c < PQnfields(res); c++)
				printf("%s%s", c ? " | " : "",
				       PQgetisnull(res, r, c) ? "-" : PQgetvalue(res, r, c));
			printf("\n");
		}
		if (PQntuples(res) == 0)
			printf("    (none)\n");
	}
	PQclear(res);
}

/* ---- processes ----------------------------------------------------------- */

static int decode_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int cbt_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			cbt__failf(__FILE__, __LINE__, 0, "waitpid(%ld): %s", (long)pid,
				   strerror(errno));
			return -1;
		}
	}
	return decode_status(status);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cbt_wait_timeout(pid_t pid, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int status;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return decode_status(status);
		if (r < 0 && errno != EINTR) {
			cbt__failf(__FILE__, __LINE__, 0, "waitpid(%ld): %s", (long)pid,
				   strerror(errno));
			return -1;
		}
		if (now_ms() >= deadline)
			break;
		cbt_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	cbt_wait(pid);
	cbt__failf(__FILE__, __LINE__, 0, "process %ld still running after %d ms; killed",
		   (long)pid, timeout_ms);
	return -1;
}

/* In the child: report and leave without running the parent's atexit handlers. */
static void exec_or_die(const char *const argv[])
{
	char msg[512];
	int n;

	execvp(argv[0], (char *const *)argv);
	n = snprintf(msg, sizeof(msg), "cbtest: cannot execute %s: %s\n", argv[0], strerror(errno));
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, msg,
				  (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
		(void)w;
	}
	_exit(127);
}

static void stdin_devnull(void)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
}

static int cloexec_pipe(int fds[2])
{
	if (pipe(fds) < 0)
		return -1;
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	return 0;
}

struct sink {
	int fd;
	char *buf;
	size_t size, len;
};

/* Read what is there; keep what fits, drop the rest (the child must not block). */
static void drain(struct sink *s)
{
	char tmp[4096];
	ssize_t r = read(s->fd, tmp, sizeof(tmp));

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r <= 0) {
		close(s->fd);
		s->fd = -1;
		return;
	}
	if (s->buf && s->size > 0 && s->len + 1 < s->size) {
		size_t room = s->size - 1 - s->len;
		size_t take = (size_t)r < room ? (size_t)r : room;

		memcpy(s->buf + s->len, tmp, take);
		s->len += take;
		s->buf[s->len] = '\0';
	}
}

int cbt_run(const char *const argv[], char *out, size_t outsz, char *errout, size_t errsz)
{
	struct sink sinks[2] = { { -1, out, outsz, 0 }, { -1, errout, errsz, 0 } };
	int pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	pid_t pid;

	if (out && outsz)
		out[0] = '\0';
	if (errout && errsz)
		errout[0] = '\0';
	if (!argv || !argv[0]) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_run: empty argv");
		return -1;
	}
	if ((out && cloexec_pipe(pout) < 0) || (errout && cloexec_pipe(perr) < 0)) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_run: pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL); /* or the child inherits unwritten stdio buffers */
	pid = fork();
	if (pid < 0) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_run: fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		stdin_devnull();
		if (out)
			dup2(pout[1], STDOUT_FILENO);
		if (errout)
			dup2(perr[1], STDERR_FILENO);
		exec_or_die(argv);
	}
	if (out) {
		close(pout[1]);
		sinks[0].fd = pout[0];
	}
	if (errout) {
		close(perr[1]);
		sinks[1].fd = perr[0];
	}
	while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
		struct pollfd pfd[2];
		int n = 0, map[2];

		for (int i = 0; i < 2; i++) {
			if (sinks[i].fd < 0)
				continue;
			pfd[n].fd = sinks[i].fd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			map[n++] = i;
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			cbt__failf(__FILE__, __LINE__, 0, "cbt_run: poll: %s", strerror(errno));
			for (int i = 0; i < 2; i++)
				if (sinks[i].fd >= 0)
					close(sinks[i].fd);
			break;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				drain(&sinks[map[i]]);
	}
	return cbt_wait(pid);

fail:
	for (int i = 0; i < 2; i++) {
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	return -1;
}

pid_t cbt_spawn(const char *const argv[], const char *stdout_path)
{
	const char *path = stdout_path ? stdout_path : "/dev/null";
	pid_t pid;
	int fd;

	if (!argv || !argv[0]) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_spawn: empty argv");
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_spawn: cannot open %s: %s", path,
			   strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		cbt__failf(__FILE__, __LINE__, 0, "cbt_spawn: fork: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (pid == 0) {
		stdin_devnull();
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		exec_or_die(argv);
	}
	close(fd);
	return pid;
}

void cbt_sleep_ms(int ms)
{
	struct timespec ts, rem;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &rem) < 0 && errno == EINTR)
		ts = rem;
}

char *cbt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (len)
		*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf) {
				fclose(f);
				return NULL;
			}
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

void cbt__write_str(const char *file, int line, const char *path, const char *s)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		cbt__failf(file, line, 0, "cannot create %s: %s", path, strerror(errno));
		return;
	}
	fputs(s, f);
	if (fclose(f) != 0)
		cbt__failf(file, line, 0, "cannot write %s: %s", path, strerror(errno));
}

void cbt__expect_file(const char *file, int line, const char *path, const char *want)
{
	char *got = cbt_slurp(path, NULL);

	cbt__eq_str(got, want, path, "expected", file, line);
	free(got);
}

/* ---- faketime ------------------------------------------------------------ */

int cbt_have_faketime(void)
{
	const char *argv[] = { "faketime", "-f", "+1h", "date", "+%s", NULL };
	char buf[64] = "";
	long long skewed;
	int rc = cbt_run(argv, buf, sizeof(buf), NULL, 0);

	if (rc != 0) {
		CBT_FAILF("the faketime command is missing (exit %d): install the Debian package "
			  "faketime (scripts/install-deps.sh installs it)",
			  rc);
		return 0;
	}
	skewed = atoll(buf);
	if (skewed - (long long)time(NULL) < 3500) {
		CBT_FAILF("faketime -f +1h did not move the clock (date said %s)", buf);
		return 0;
	}
	return 1;
}

/* argv prefix that runs a program under libfaketime at @p offset. Not the
 * faketime command: it forks, so a signal to the pid the test holds would end
 * the wrapper and orphan the program. env execs in place. ASan must accept
 * libfaketime preloaded ahead of it. All strings live in @p buf. */
void cbt_faketime_prefix(const char **prefix, char *buf, size_t size, const char *offset)
{
	const char *old = getenv("ASAN_OPTIONS");
	glob_t g;
	size_t n;
	int k = 0;

	prefix[k++] = "env";
	n = (size_t)snprintf(buf, size, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", old ? old : "",
			     old && *old ? ":" : "");
	prefix[k++] = buf;
	buf += n + 1;
	size -= n + 1;
	if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		n = (size_t)snprintf(buf, size, "LD_PRELOAD=%s", g.gl_pathv[0]);
		prefix[k++] = buf;
		buf += n + 1;
		size -= n + 1;
	}
	globfree(&g);
	snprintf(buf, size, "FAKETIME=%s", offset);
	prefix[k++] = buf;
	prefix[k] = NULL;
}

/* ---- the examples binary --------------------------------------------------- */

#define CBT_EXAMPLES_ARGS 48

static int examples_argv(const char **argv, const char *const *prefix, const char *conninfo,
			 const char *const *args)
{
	size_t n = 0;

	while (prefix && *prefix && n < 8)
		argv[n++] = *prefix++;
	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = conninfo;
	while (*args && n < CBT_EXAMPLES_ARGS - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (*args) {
		CBT_FAILF("cbt_examples: more than %d words", CBT_EXAMPLES_ARGS - 1);
		return -1;
	}
	return 0;
}

int cbt_examples_run(const char *const *prefix, const char *conninfo, const char *const *args,
		     char *out, size_t outsz, char *errout, size_t errsz)
{
	const char *argv[CBT_EXAMPLES_ARGS];

	if (examples_argv(argv, prefix, conninfo, args) < 0)
		return -1;
	return cbt_run(argv, out, outsz, errout, errsz);
}

pid_t cbt_examples_spawn(const char *const *prefix, const char *conninfo, const char *log,
			 const char *const *args)
{
	const char *argv[CBT_EXAMPLES_ARGS];

	if (examples_argv(argv, prefix, conninfo, args) < 0)
		return -1;
	return cbt_spawn(argv, log);
}
