/*
 * A test job's parts: a reader of the numbers 1..last (from memory, with
 * restart by position), a processor that can filter odd numbers or fail on
 * chosen ones, and a writer into a table `sink (n bigint)` that can also run
 * an extra SQL statement per chunk (to inject database errors). Its stop
 * hook asks the repository to stop the execution from another connection.
 */
#ifndef CBT_NUMBERS_H
#define CBT_NUMBERS_H

#include <cbatch.h>

#define CBT_NUMBERS_MAX_FAULTS 8

typedef struct cbt_numbers {
	/* configuration */
	long long last;                                 /* read 1..last */
	int drop_odd;                                   /* processor filters odd numbers */
	long long fail_read[CBT_NUMBERS_MAX_FAULTS];    /* read error (CB_EINVAL) on these */
	long long fail_process[CBT_NUMBERS_MAX_FAULTS]; /* process error (CB_EINVAL) on these */
	const char *extra_sql;     /* run in each chunk's transaction after the insert */
	int stop_after_chunks;     /* request a stop during this chunk (1-based) */
	size_t end_chunk_every;    /* end each chunk after this many items (CB_CHUNK_END) */
	int empty_chunk_ends;      /* say CB_CHUNK_END this many times before any item */
	const char *stop_conninfo; /* connection for the stop request */
	/* observed */
	long long reads, processed, writes, chunks_written;
	/* state (internal) */
	long long next, committed, pending;
	long long *buf;
	size_t cap, used;
	char stmt[64], extra_stmt[64];
	long long job_execution_id;
} cbt_numbers;

/* A chunk step build callback: user is a cbt_numbers. */
int cbt_numbers_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err);

#endif
