/**
 * @file cbtest.h
 * The test harness: a CUnit runner, assertions that print cbatch's own error,
 * and helpers for databases (libpq) and child processes.
 *
 * A test program is one suite:
 *
 *     static char db[CBT_CONNINFO_MAX];
 *     static int init(void) { return cbt_db_create(db, sizeof(db), "mytest"); }
 *     static int clean(void) { cbt_db_drop(db); return 0; }
 *     static void test_x(void) { cb_error err = CB_ERROR_INIT; CBT_PASS(cb_x(..., &err), &err); }
 *     static const CU_TestInfo tests[] = { { "x", test_x }, CU_TEST_INFO_NULL };
 *     int main(void) { return cbt_main("mytest", init, clean, tests); }
 *
 * Every test program so made answers `--list` (its cases, one a line, as
 * lower-case words joined by '_'; "suite.case" when it has several suites) and
 * `--run CASE` (repeatable: only those cases, between the suite's init and
 * cleanup), and prints each case's wall time ("[1.23 s]") and the run's in its
 * final line. ctest runs each case as its own test (tests/CMakeLists.txt).
 *
 * Integration tests get the throwaway cluster from ctest through the environment:
 * CBATCH_TEST_PGHOST (socket directory), CBATCH_TEST_PGPORT, CBATCH_TEST_PGUSER,
 * and the binaries under test from CBATCH_TEST_EXAMPLES and CBATCH_TEST_CLI;
 * CBATCH_TEST_SOURCE_DIR is the source tree (for test data) and CBATCH_TEST_TMPDIR
 * a scratch directory. Run them through ctest, which starts the cluster.
 *
 * Helpers that take a file and line (through the macros of the same name) report
 * failures at the caller's line: they print the reason to stderr and, inside a
 * test, record a CUnit failure; they never exit. "Fatal" ones also end the
 * current test (CUnit longjmps out of it). CUnit cannot record a failure outside
 * a test, so in suite init and cleanup the helpers only print, and init must
 * return non-zero when one fails (cbt_db_create returns -1 for that).
 */
#ifndef CBTEST_H
#define CBTEST_H

#include <stddef.h>
#include <sys/types.h>

#include <CUnit/CUnit.h>
#include <CUnit/Basic.h>
#include <libpq-fe.h>

#include "cbatch/error.h"

/** Enough for any conninfo the harness writes. */
#define CBT_CONNINFO_MAX 1024

/**
 * Run one suite and report. Initialises the CUnit registry, adds the suite
 * (@p init and @p clean may be NULL) and the @p tests (terminated by
 * CU_TEST_INFO_NULL), runs them in verbose basic mode and prints a final line.
 * Reads the program's arguments itself: --list prints the cases and runs
 * nothing (no init), --run CASE runs only the cases named; other arguments are
 * left to the program.
 * @return 0 only if every test passed and the suite's init and cleanup succeeded;
 *         1 otherwise (including CUnit's own errors). Use it as main's return.
 */
int cbt_main(const char *suite_name, CU_InitializeFunc init, CU_CleanupFunc clean,
	     const CU_TestInfo *tests);

/**
 * As cbt_main, for several suites: @p suites is an array of CU_SuiteInfo
 * ({ name, init, cleanup, setup, teardown, tests }) terminated by
 * CU_SUITE_INFO_NULL. @p name labels the final line.
 */
int cbt_main_suites(const char *name, const CU_SuiteInfo *suites);

/* ---- assertions ---------------------------------------------------------- */

/**
 * Assert that an int-returning cbatch call succeeded (returned >= 0). On failure
 * prints the expression, the code and its name (cb_strcode), and the message of
 * the cb_error @p errptr (may be NULL), and records a CUnit failure. The
 * expression is evaluated once; @p errptr only on failure.
 */
#define CBT_PASS(expr, errptr) cbt__pass((expr), (errptr), #expr, __FILE__, __LINE__, 0)
/** As CBT_PASS, but a failure also ends the current test. */
#define CBT_PASS_FATAL(expr, errptr) cbt__pass((expr), (errptr), #expr, __FILE__, __LINE__, 1)

/**
 * Assert that a call failed with exactly @p code (e.g. CB_EINVAL), printing the
 * actual code and message otherwise.
 */
#define CBT_FAILS_WITH(code, expr, errptr)                                                         \
	cbt__fails_with((code), (expr), (errptr), #expr, __FILE__, __LINE__)

/** Assert two long long values are equal; prints both on failure. */
#define CBT_EQ_LL(a, b) cbt__eq_ll((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)

/** Assert two strings are equal (NULL equals only NULL); prints both on failure. */
#define CBT_EQ_STR(a, b) cbt__eq_str((a), (b), #a, #b, __FILE__, __LINE__)

/** Assert that string @p hay contains @p needle; prints both on failure. */
#define CBT_CONTAINS(hay, needle) cbt__contains((hay), (needle), #hay, __FILE__, __LINE__)

/** Record a failure with a printf-style message at the caller's line. */
#define CBT_FAILF(...) cbt__failf(__FILE__, __LINE__, 0, __VA_ARGS__)

/* ---- database (libpq) ---------------------------------------------------- */

/**
 * Create a fresh, empty database named `<prefix>_<pid>_<counter>` on the test
 * cluster (prefix lower-cased, other characters than [a-z0-9_] replaced by '_')
 * and write its conninfo ("host=... port=... user=... dbname=...") to @p out.
 * The conninfo is one argv element, usable as `--db` for child processes.
 * @return 0, or -1 after recording a failure (cluster missing, environment not
 *         set, or @p outsz too small). Safe in suite init.
 */
#define cbt_db_create(out, outsz, prefix)                                                          \
	cbt__db_create(__FILE__, __LINE__, (out), (outsz), (prefix))

/**
 * Drop the database named in @p conninfo: terminate its other sessions, then
 * DROP DATABASE ... WITH (FORCE). Does nothing for NULL or "". Refuses the
 * postgres and template databases. Safe in suite cleanup.
 */
#define cbt_db_drop(conninfo) cbt__db_drop(__FILE__, __LINE__, (conninfo))

/**
 * Connect, or fail loudly (fatal inside a test) and return NULL.
 * @return a new connection; the caller frees it with PQfinish.
 */
#define cbt_connect(conninfo) cbt__connect(__FILE__, __LINE__, (conninfo))

/**
 * Run @p sql (one or more statements, simple query protocol). On error records a
 * failure with the server's message. @return 0 or -1.
 */
#define cbt_exec(conn, sql) cbt__exec(__FILE__, __LINE__, (conn), (sql))

/**
 * Run a query and return its first row's first column as a long long.
 * @return the value, or -1 after recording a failure (error, no row, NULL or
 *         not an integer).
 */
#define cbt_query_ll(conn, sql) cbt__query_ll(__FILE__, __LINE__, (conn), (sql))
/* Files: write @p s to @p path (a failure fails the test); the file's whole
 * content as a new NUL-terminated string (NULL if unreadable; @p len may be
 * NULL); assert a file's content. */
#define cbt_write_str(path, s) cbt__write_str(__FILE__, __LINE__, (path), (s))
char *cbt_slurp(const char *path, size_t *len);
#define CBT_EXPECT_FILE(path, want) cbt__expect_file(__FILE__, __LINE__, (path), (want))
void cbt__write_str(const char *file, int line, const char *path, const char *s);
void cbt__expect_file(const char *file, int line, const char *path, const char *want);

/*
 * cbt_query_ll with parameters: @p types names each value's C type in order
 * ("lld" long long, "ld" long, "d" int, "s" string, NULL being SQL NULL;
 * separated by spaces), and the values follow. They travel as $1..$n (at
 * most 8), never pasted into the SQL.
 * E.g. cbt_queryp_ll(conn, "SELECT count(*) FROM t WHERE id = $1", "lld", id).
 */
#define cbt_queryp_ll(conn, sql, ...) cbt__queryp_ll(__FILE__, __LINE__, (conn), (sql), __VA_ARGS__)

/**
 * Run a query and copy its first row's first column, as text, to @p out.
 * @return 0, or -1 after recording a failure (error, no row, NULL, too long);
 *         @p out is then "".
 */
#define cbt_query_str(conn, sql, out, outsz)                                                       \
	cbt__query_str(__FILE__, __LINE__, (conn), (sql), (out), (outsz))

/**
 * Suite init for tests of the C API: a fresh database (as cbt_db_create),
 * a connection to it in @p conn (PQfinish it in cleanup) and the repository
 * schema. @return 0, or -1 after printing why.
 */
int cbt_repo_db(char *conninfo, size_t size, const char *prefix, PGconn **conn);

/* ---- processes ----------------------------------------------------------- */

/**
 * Run a program to completion: fork, execvp(argv[0], argv), wait. stdin is
 * /dev/null. If @p out (or @p errout) is not NULL the child's stdout (stderr) is
 * captured into it, NUL-terminated and truncated to fit; if NULL it goes to the
 * test's own stdout (stderr). @p argv is NULL-terminated.
 * @return the exit status, 128 + signal if it was killed, 127 if it could not
 *         be executed, or -1 if it could not be started (failure recorded).
 */
int cbt_run(const char *const argv[], char *out, size_t outsz, char *errout, size_t errsz);

/**
 * Complete the command line @p words (the program first, the word being
 * completed last; NULL-terminated) with the bash completion the build wrote
 * ($CBATCH_TEST_DOC_DIR/cbatch.bash): the candidates into @p out, sorted, one
 * a line; stderr into @p errout. @return as cbt_run.
 */
int cbt_bash_complete(const char *const *words, char *out, size_t outsz, char *errout,
		      size_t errsz);

/**
 * Start a program in the background (stdin /dev/null; stdout and stderr to
 * @p stdout_path, truncated, or to /dev/null if NULL).
 * @return its pid, or -1 after recording a failure.
 */
pid_t cbt_spawn(const char *const argv[], const char *stdout_path);

/** Wait for @p pid. @return its exit status, 128 + signal, or -1 on error. */
int cbt_wait(pid_t pid);

/**
 * Wait for @p pid at most @p timeout_ms; on timeout SIGKILL it, reap it, record
 * a failure and return -1. @return as cbt_wait.
 */
int cbt_wait_timeout(pid_t pid, int timeout_ms);

/**
 * Run `[PREFIX...] cbatch-examples --db CONNINFO ARGS...` to completion, its
 * output captured as cbt_run does (@p out / @p errout may be NULL). @p prefix
 * (NULL-terminated, may be NULL) goes first, e.g. cbt_faketime_prefix's.
 * At most 40 words in all. @return as cbt_run.
 */
int cbt_examples_run(const char *const *prefix, const char *conninfo, const char *const *args,
		     char *out, size_t outsz, char *errout, size_t errsz);

/** The same in the background, its output to @p log (see cbt_spawn). */
pid_t cbt_examples_spawn(const char *const *prefix, const char *conninfo, const char *log,
			 const char *const *args);

/** The cbatch-examples binary ($CBATCH_TEST_EXAMPLES). Never NULL. */
const char *cbt_examples_bin(void);
/** The admin CLI binary ($CBATCH_TEST_CLI). Never NULL. */
const char *cbt_cli_bin(void);
/** The source tree ($CBATCH_TEST_SOURCE_DIR, else "."). */
const char *cbt_source_dir(void);
/** A scratch directory ($CBATCH_TEST_TMPDIR, else $TMPDIR, else /tmp). */
const char *cbt_tmpdir(void);

/**
 * 1 if the faketime command works (it moves `date` by an hour), else 0 after
 * recording a failure that says how to install it.
 */
int cbt_have_faketime(void);

/**
 * Fill @p prefix (6 slots) with an argv prefix that runs a program under
 * `faketime -f OFFSET` (e.g. "+1h"); @p asan is scratch for the ASAN_OPTIONS
 * that accept libfaketime preloaded ahead of the sanitizer runtime.
 */
void cbt_faketime_prefix(const char **prefix, char *asan, size_t asan_size, const char *offset);

/** Monotonic clock in seconds (for durations). */
double cbt_now(void);

/**
 * Wait (up to 30 s, else a failure) until no other session is connected to
 * @p conn's database. After a SIGKILL this is when the dead client's work is
 * settled: a pipeline it sent whole may still commit server-side.
 */
#define cbt_wait_sessions_gone(conn) cbt__wait_sessions_gone(__FILE__, __LINE__, (conn))
void cbt__wait_sessions_gone(const char *file, int line, PGconn *conn);

/**
 * Print every row of @p sql under @p title, one line each, columns split by
 * " | " (NULL as "-"): what a failing test shows of the state that failed it.
 */
void cbt_print_rows(PGconn *conn, const char *title, const char *sql);

/** Sleep @p ms milliseconds (restarted after signals). */
void cbt_sleep_ms(int ms);

/* Poll (every 5 ms) until @p sql, an integer query, is positive: 1, or 0 after @p timeout_ms. */
int cbt_wait_until(PGconn *conn, int timeout_ms, const char *sql);
/* The same with parameters, as cbt_queryp_ll. */
#define cbt_wait_untilp(conn, timeout_ms, sql, ...)                                                \
	cbt__wait_untilp(__FILE__, __LINE__, (conn), (timeout_ms), (sql), __VA_ARGS__)
int cbt__wait_untilp(const char *file, int line, PGconn *conn, int timeout_ms, const char *sql,
		     const char *types, ...);

/* ---- internals behind the macros ----------------------------------------- */

void cbt__failf(const char *file, int line, int fatal, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;
void cbt__pass(int rc, const cb_error *err, const char *expr, const char *file, int line,
	       int fatal);
void cbt__fails_with(int want, int rc, const cb_error *err, const char *expr, const char *file,
		     int line);
void cbt__eq_ll(long long a, long long b, const char *as, const char *bs, const char *file,
		int line);
void cbt__eq_str(const char *a, const char *b, const char *as, const char *bs, const char *file,
		 int line);
void cbt__contains(const char *hay, const char *needle, const char *hays, const char *file,
		   int line);
int cbt__db_create(const char *file, int line, char *out, size_t outsz, const char *prefix);
void cbt__db_drop(const char *file, int line, const char *conninfo);
PGconn *cbt__connect(const char *file, int line, const char *conninfo);
int cbt__exec(const char *file, int line, PGconn *conn, const char *sql);
long long cbt__query_ll(const char *file, int line, PGconn *conn, const char *sql);
long long cbt__queryp_ll(const char *file, int line, PGconn *conn, const char *sql,
			 const char *types, ...);
int cbt__query_str(const char *file, int line, PGconn *conn, const char *sql, char *out,
		   size_t outsz);

#endif
