/*
 * The chunk step's internals (framework/step_chunk.c), shared with its
 * two-connection loop (framework/step_overlap.c).
 */
#ifndef CB_FRAMEWORK_STEP_CHUNK_H
#define CB_FRAMEWORK_STEP_CHUNK_H

#include "engine.h"
#include "repo.h"
#include "step_context.h"
#include "tx.h"

typedef struct counts {
	long long read, written, filtered, read_skip, process_skip, write_skip;
} counts;

/* What went wrong in a chunk attempt, and where. */
typedef struct attempt {
	counts c;
	int done;
	int more;       /* the reader ended the chunk early (CB_CHUNK_END) */
	int failed;     /* 0, or the negative code */
	cb_fault fault; /* where it failed */
} attempt;

/* One of the two connections of a step on two (chunk.connections = 2) and
 * the chunk in flight on it. */
typedef struct lane {
	cb_tx *tx;
	cb__checkpoint checkpoint; /* borrowed by the pipeline until the COMMIT's answer */
	char status[16];           /* the checkpoint's answer: the job execution's status */
	attempt a;                 /* the chunk's counts */
	long long version;         /* the step's version its chunk commits on */
	int open;                  /* a chunk began on it and did not commit */
	int busy;                  /* its COMMIT went out, the answer is not read yet */
} lane;

typedef struct chunk_step {
	cb__run *run;
	const cb_step_def *def;
	cb_step_context sc;
	cb_chunk chunk;
	cb_chunk_parts parts;
	int built, reader_open, processor_open;
	size_t writers_open;
	cb_tx *tx;
	void **items, **outs, **filtered; /* filtered: read items the processor dropped */
	size_t nitems, nouts, nfiltered;
	/* This attempt called the reader's read / writer i's write: only those
	 * hear of a rollback (see item.h: a reader or writer settles the
	 * previous chunk's commit when it is next called). */
	int read_called;
	unsigned char write_called[CB_MAX_WRITERS];
	char checkpoint_stmt[64];
	cb__checkpoint checkpoint; /* the one being committed */
	long long version;
	long long commits, skips;
	counts total;
	unsigned long long skip_limit;
	/* Two connections (chunk.connections = 2): lanes[0] runs on the step's
	 * connection with cs->tx, lanes[1] on conn2 (NULL until opened). */
	int connections;
	PGconn *conn2;
	lane lanes[2];
	int solo;           /* the next chunk runs alone (after a failure in flight) */
	unsigned int falls; /* failures with two chunks in flight */
	json_t *context;    /* borrowed: the step's context, as last committed or being built */
} chunk_step;

/* Close the parts (and free what build made); none open afterwards. */
void cb__chunk_close_parts(chunk_step *cs);

/* Reopen the parts from the last committed checkpoint (reconnect, restart
 * of a chunk after a failure in flight): the repository's version and
 * context, the checkpoint statement prepared again. @p ctx: the chunk_step. */
int cb__chunk_resume(void *ctx, cb_error *err);

/* A chunk up to its writes (BEGIN, read, process, write) on cs->tx; see
 * step_chunk.c. */
int cb__chunk_fill(chunk_step *cs, attempt *a, cb_error *err);

/* The parts' positions into the step context (and the lock checked). */
int cb__chunk_update_context(chunk_step *cs, cb_error *err);

/* Queue checkpoint @p k of counts @p c in cs->tx, expecting the step at
 * @p version; @p secondary: sent on the run's second connection. */
int cb__chunk_queue_checkpoint(chunk_step *cs, cb__checkpoint *k, long long version, int secondary,
			       const counts *c, char *status, size_t size, cb_error *err);

/* The step's last chunk committed: the writers finish their output. */
int cb__chunk_complete_writers(chunk_step *cs, cb_error *err);

/* A chunk committed: count it, tell the listeners. */
void cb__chunk_committed(chunk_step *cs, const counts *c);

/* Two connections (step_overlap.c): run chunks until the input ends, a
 * stop, or a failure. @return 0 when the step ended (out->status set, or
 * out->error), 1 to run the next chunk alone. */
int cb__chunk_run_two(chunk_step *cs, cb__step_outcome *out);

/* Close the second connection; the step goes on with one. */
void cb__chunk_lane_drop(chunk_step *cs);

/* Failures with chunks in flight after which a step stays on one connection. */
#define CB__CHUNK_MAX_FALLS 3

#endif
