/*
 * What the lock tests share (test_lock*.c, lock_kit.c): one database per
 * program, the ledger example run against it, checks and waits.
 */
#ifndef LOCK_KIT_H
#define LOCK_KIT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include <cbatch.h>

#include "cbtest.h"

#define MAXARGS 40

/* The program's database, and its own path (for --probe). */
extern char db[CBT_CONNINFO_MAX];
extern char self_exe[PATH_MAX];
/* The output of the last ex / ex_with. */
extern char out[65536], errout[65536];

/* Suite init and cleanup: the database. */
int init(void);
int clean(void);

/* Run cbatch-examples --db db ARGS... (NULL-terminated) to the end; output in out/errout. */
int ex(const char *first, ...);
/* As ex, connected with @p conninfo instead of db. */
int ex_with(const char *conninfo, const char *first, ...);
/* As ex, in the background; stdout and stderr go to tmpdir/@p log. */
pid_t ex_spawn_with(const char *const *prefix, const char *conninfo, const char *log,
		    const char *first, ...);
#define ex_spawn(log, ...) ex_spawn_with(NULL, db, (log), __VA_ARGS__)

/* A login role with every right on the public schema's tables and sequences,
 * not superuser; @p conninfo receives a conninfo for it. */
void make_role(PGconn *conn, const char *role, char *conninfo, size_t size);
void drop_role(PGconn *conn, const char *role);

/* The contents of tmpdir/@p log (truncated to @p size). */
void read_log(const char *log, char *buf, size_t size);
double q_double(PGconn *conn, const char *sql);

/* Fresh repository and an empty ledger example. */
void reset(PGconn *conn);
/* Add @p rows fresh accounts; @return the id of the first one. */
long long add_rows(PGconn *conn, long long rows);
/* Every account is in the ledger exactly once with its amount, and processed. */
void assert_exactly_once(PGconn *conn);

/* The client sessions of cbatch processes (job and heartbeat) in our database. */
#define CLIENT_SESSIONS                                                                            \
	"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "                \
	"AND application_name IN ('cbatch', 'cbatch-heartbeat')"

void wait_no_client_sessions(PGconn *conn);
/* Wait (database time) until nobody holds the lock @p name. */
void wait_lock_free(PGconn *conn, const char *name, int timeout_ms);
long long audit_count(PGconn *conn, long long after_id, const char *outcome);
long long audit_mark(PGconn *conn);
/* The job execution of the process @p pid (its owner id is host:pid:random). */
long long execution_of(PGconn *conn, pid_t pid);
int still_running(pid_t pid);

/* A job whose one call takes longer than the lease (lock_kit.c). */
#define LONG_TASK_JOB "long_tasklet"
typedef struct long_task {
	double seconds; /* how long the single call takes */
	int probe_rc;   /* exit status of the probe launched mid-call */
	char probe_out[4096];
	double took;
} long_task;
cb_job *long_task_job(long_task *t);

/* The numbers job that freezes itself inside chunk $CBT_FREEZE_AT (lock_kit.c). */
#define FREEZE_JOB   "freeze"
#define FREEZE_ROWS  2000
#define FREEZE_CHUNK 10
cb_job *freeze_job(void);

/* `--probe CONNINFO JOB`: launch JOB from this (other) process. */
int probe_main(const char *conninfo, const char *job_name);
/* Start this program as --probe CONNINFO JOB in the background, output to tmpdir/@p log. */
pid_t spawn_probe(const char *conninfo, const char *job, const char *log);
/* The state letter of process @p pid (/proc/PID/stat), or '?'. */
char proc_state(pid_t pid);

/*
 * The main of a lock test program: --probe, `PROGRAM WORD` (only the tests
 * whose name contains WORD), else the harness's cbt_main (--list, --run).
 * @p ntests is the size of @p tests with its terminator.
 */
int lock_main(int argc, char **argv, const char *name, const CU_TestInfo *tests, size_t ntests);

#endif
