/* The claim-and-run loop of partition workers (framework/worker.c). */
#ifndef CB_FRAMEWORK_WORKER_H
#define CB_FRAMEWORK_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include "engine.h"
#include "repo.h"

struct cb_registry;

/* How a worker thread fares: since when its every claim fails, and why. */
typedef struct cb__work_health {
	pthread_mutex_t mu;
	double failing_since; /* monotonic seconds; 0: its last claim worked */
	char why[CB_ERROR_MESSAGE_MAX];
} cb__work_health;

/* What one worker thread works on. Borrowed pointers outlive the loop. */
typedef struct cb__work {
	const cb_job *job;             /* the job (a launching process), or NULL: by name */
	const struct cb_registry *reg; /* where to find jobs by name */
	long long job_execution_id;    /* > 0: only this execution's partitions */
	const char *const *job_names;  /* claim only these jobs' partitions (njobs > 0) */
	const char *runnable;          /* what it can run (cb__work_runnable); NULL: of `job` */
	size_t njobs;
	double lease;            /* of each claimed partition, seconds */
	double exit_when_idle;   /* cb_worker_run's threads: leave when idle this long */
	atomic_int *quit;        /* set: leave after the current chunk */
	int local;               /* a thread of the launching process */
	int verbose;             /* a line per claim and end on stderr */
	cb__work_health *health; /* where failing claims are reported, or NULL */
	char worker[128];        /* readable name: host/pid/thread */
} cb__work;

/*
 * The fingerprint of partitioned step @p def of @p job (16 hex digits into
 * @p out), recorded by its manager and required of claimants. 0 or CB_ENOMEM.
 */
int cb__step_fingerprint(char *out, size_t size, const cb_job *job, const cb_step_def *def);

/*
 * What a worker of @p jobs can run, as batch_partition_claim takes it: a JSON
 * array of {"job", "step", "fingerprint"} (*out malloc'd).
 */
int cb__work_runnable(char **out, const cb_job *const *jobs, size_t njobs, cb_error *err);

/* LISTEN on the partitions channel. */
int cb__work_listen(PGconn *conn, cb_error *err);

/* Wait up to @p seconds for a notice on @p conn (consumed). */
void cb__work_wait(PGconn *conn, double seconds);

/* Claim and run one partition; *claimed = 0 when there was none. */
int cb__work_one(PGconn *conn, const cb__work *w, int *claimed, cb_worker_result *res,
		 cb_error *err);

/* Claim and run until quit, a stop signal, or @p exit_when_idle (> 0) seconds idle. */
int cb__work_loop(PGconn *conn, const cb__work *w, double exit_when_idle, cb_worker_result *res);

/* Threads running cb__work_loop on connections of their own, like @p like. */
typedef struct cb__worker_pool cb__worker_pool;

/*
 * Start @p n threads with copies of @p work (their quit flag is the pool's;
 * @p what names them in application_name and messages). On failure the
 * threads already started are told to leave; stop the pool either way.
 */
int cb__workers_start(cb__worker_pool **out, PGconn *like, unsigned int n, const cb__work *work,
		      const char *what, cb_error *err);

/* Tell the threads to leave after their current chunk (without waiting). */
void cb__workers_quit(cb__worker_pool *p);

/* Tell the threads to leave, join them, add up their results (@p sum may be NULL), free. */
void cb__workers_stop(cb__worker_pool *p, cb_worker_result *sum);

/*
 * 1 when every thread of the pool has failed to claim for at least
 * @p seconds (the database refuses it, say): @p why receives the last error.
 */
int cb__workers_failing(cb__worker_pool *p, double seconds, char *why, size_t size);

/* Join the threads when they leave by themselves, then as cb__workers_stop. */
void cb__workers_wait(cb__worker_pool *p, cb_worker_result *sum);

/* "host/pid/thread" */
void cb__work_name(char *out, size_t size, unsigned int thread);

#endif
