/* The claim-and-run loop of partition workers (framework/worker.c). */
#ifndef CB_FRAMEWORK_WORKER_H
#define CB_FRAMEWORK_WORKER_H

#include <stdatomic.h>
#include "engine.h"
#include "repo.h"

struct cb_registry;

/* What one worker thread works on. Borrowed pointers outlive the loop. */
typedef struct cb__work {
	const cb_job *job;             /* the job (a launching process), or NULL: by name */
	const struct cb_registry *reg; /* where to find jobs by name */
	long long job_execution_id;    /* > 0: only this execution's partitions */
	const char *const *job_names;  /* claim only these jobs' partitions (njobs > 0) */
	size_t njobs;
	double lease;          /* of each claimed partition, seconds */
	double exit_when_idle; /* cb_worker_run's threads: leave when idle this long */
	atomic_int *quit;      /* set: leave after the current chunk */
	int local;             /* a thread of the launching process */
	int verbose;           /* a line per claim and end on stderr */
	char worker[128];      /* readable name: host/pid/thread */
} cb__work;

/* LISTEN on the partitions channel. */
int cb__work_listen(PGconn *conn, cb_error *err);

/* Wait up to @p seconds for a notice on @p conn (consumed). */
void cb__work_wait(PGconn *conn, double seconds);

/* Claim and run one partition; *claimed = 0 when there was none. */
int cb__work_one(PGconn *conn, const cb__work *w, int *claimed, cb_worker_result *res,
		 cb_error *err);

/* Claim and run until quit, a stop signal, or @p exit_when_idle (> 0) seconds idle. */
int cb__work_loop(PGconn *conn, const cb__work *w, double exit_when_idle, cb_worker_result *res);

/* "host/pid/thread" */
void cb__work_name(char *out, size_t size, unsigned int thread);

#endif
