/**
 * @file partition.h
 * Partitioned steps and the workers that run them.
 *
 * A chunk step whose definition has a `partition` callback (step.h, since
 * version 2) is a manager step: when it starts, the callback splits the
 * step's input into N partitions, each a JSON object. The manager's step
 * execution and one worker step execution per partition — named
 * "<step>:partition<i>", with the object as the "partition" member of its
 * execution context, its own counts and status — are created in one
 * transaction. Workers then claim the open partitions with FOR UPDATE SKIP
 * LOCKED, each under its own lock in batch_lock ("cbatch.partition:<id>")
 * with a lease, a heartbeat and a fencing token, and run them as ordinary
 * chunk steps built by the same `build` callback, whose reader learns its
 * share of the input with cb_step_context_partition. The keyset reader
 * applies the built-in partitions below by itself.
 *
 * Who works: K threads of the launching process, each with its own
 * connection (run parameter `partition.threads`, long; default: the number
 * of partitions, at most the number of online CPUs; 0: none, only worker
 * processes), and any number of `worker` processes on any host that reach
 * the database (cb_worker_run; the CLI's `worker` command). A worker wakes
 * on LISTEN/NOTIFY (channel "cbatch_partitions") and otherwise looks for
 * partitions whose owner's lease expired once per lease/2.
 *
 * Who may claim: a worker claims only partitions of its jobs whose manager
 * step its program defines as the manager's program did. The manager records
 * the fingerprint of its step definition when it creates the partitions: an
 * XXH3-64 hash of a canonical text of the job and step names, the step kind,
 * that it is partitioned, its default skip and retry limits, its classifier
 * (default, skip-invalid or its own) and its `revision` (step.h). Not in it:
 * the chunk size, the partition count, the retry backoff and the start limit
 * (they pace or split a run, they do not change what a partition does), nor
 * the callbacks' addresses, which differ between builds; what `build` makes is
 * not visible before a partition runs, so a program that changes its reader,
 * processor or writers sets a new `revision`. Workers of another build, or
 * whose program lacks the step, leave the partitions to matching workers (a
 * rolling upgrade). Nor does a worker claim partitions of an execution whose
 * manager is a process of its own host that is gone, or whose manager's
 * lease has run out: the restart buries them. A manager whose partitions
 * wait while none runs says so on stderr after 5 s, then every minute.
 *
 * Failures: a worker that dies or loses its database for longer than the
 * lease loses its partition to the next claimant, which resumes it from its
 * last committed context; the old owner's next checkpoint is refused
 * (fenced: its partition lock no longer carries its token, and the claim
 * bumped the step execution's version) and its chunk rolls back. The
 * manager waits for all partitions, reports progress summed over them and
 * ends COMPLETED when all completed, else FAILED (any failed) or STOPPED;
 * a restart reruns only the partitions that did not complete, from their
 * committed contexts, without calling the partitioner again. `stop`
 * reaches every worker at its next checkpoint.
 *
 * Listeners: before_step/after_step and the chunk callbacks of a partition
 * run in the thread (or worker process) that runs it, not in the launching
 * thread; the manager step's before_step/after_step run in the launching
 * thread. A listener shared by partitions must be thread-safe.
 */
#ifndef CBATCH_PARTITION_H
#define CBATCH_PARTITION_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>
#include "error.h"
#include "item.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** The most partitions one step may have. */
#define CB_MAX_PARTITIONS 4096

/**
 * The partition a worker step execution runs: the object the partitioner
 * made, with "index" and "count" added by the engine (borrowed; valid for the
 * step execution). NULL when @p sc is not a partition's step.
 */
const json_t *cb_step_context_partition(const cb_step_context *sc);

#define CB_KEY_RANGE_OPTIONS_VERSION 2

/** Options of cb_partition_key_ranges. Strings are borrowed for the call. */
typedef struct cb_key_range_options {
	unsigned int version;           /**< CB_KEY_RANGE_OPTIONS_VERSION */
	const char *schema;             /**< NULL: unqualified (search_path) */
	const char *table;              /**< required */
	const char *const *key_columns; /**< the primary key (unique together); required */
	size_t nkeys;                   /**< 0: @p key_columns is NULL-terminated */
	/** Only rows that match count for the balance, e.g. "NOT processed"; NULL: all. */
	const char *where;
	/**
	 * Rows to sample for the boundaries; 0: 100 per partition, at least
	 * 10,000. When fewer rows match (counted up to twice the sample), they
	 * are read whole.
	 */
	size_t sample_rows;
	/**
	 * Since version 2. Non-zero: no high-water mark; the last range is
	 * open-ended, so rows that arrive later, above the last boundary, fall
	 * into it (pair it with an unbounded reader). 0 (and every version 1
	 * caller): the last range ends at the high-water mark.
	 */
	int unbounded;
} cb_key_range_options;

/** Key range options with every member zero but the version. */
#define CB_KEY_RANGE_OPTIONS_INIT                                                                  \
	{                                                                                          \
		.version = CB_KEY_RANGE_OPTIONS_VERSION                                            \
	}

/**
 * Append to the JSON array @p out @p count contiguous key ranges of the rows
 * of @p opts->table that match @p opts->where now:
 * {"keys": [..], "lo": [..] | null, "hi": [..] | null}, lo inclusive, hi
 * exclusive, null unbounded on that side (the first range has no lower
 * bound).
 *
 * A run has a bounded input: the partitioner first takes the high-water
 * mark, the largest key in key order of the matching rows
 * (`ORDER BY k1 DESC, ... LIMIT 1`), and the last range carries it,
 * inclusive: {"lo": [..], "hi": null, "hwm": [..]}. The keyset reader of
 * that partition reads no key above it, and since the partitions are stored
 * with their step executions, a partition run late, resumed by another
 * worker or restarted keeps the bound: rows that arrive later are the next
 * run's. No matching row: one range {"lo": null, "hi": null, "hwm": null},
 * which holds nothing. @p opts->unbounded opts out (the last range is then
 * open-ended, as before version 2).
 *
 * The boundaries are quantiles of the keys of the matching rows up to the
 * mark, so skewed keys still give balanced ranges, not min/max arithmetic.
 * The rows that match are counted first, up to twice the sample: when there
 * are at most that many they are all read, and the boundaries are exact, so
 * that with at least @p count matching rows there are exactly @p count
 * ranges, none empty (a few new rows among many processed ones included).
 * More rows than that are sampled (TABLESAMPLE BERNOULLI: rows, by the
 * table's statistics, pg_class.reltuples; over 50 million rows TABLESAMPLE
 * SYSTEM: pages, cheaper but lumpier where keys are clustered by page); a
 * sample in which too few rows matched is drawn again larger, then the rows
 * are read whole. A table never analysed is read whole. Fewer ranges come
 * out when fewer rows match than @p count (at least one). Runs on @p conn
 * (not in a transaction, or inside the caller's). @return 0, CB_EINVAL
 * (options, @p count 0 or over CB_MAX_PARTITIONS, a NULL key), CB_EDB,
 * CB_ENOMEM.
 */
int cb_partition_key_ranges(json_t *out, PGconn *conn, const cb_key_range_options *opts,
			    size_t count, cb_error *err);

/**
 * Append @p count hash buckets to @p out: {"keys": [..], "bucket": i,
 * "buckets": count}; a row belongs to bucket i when
 * mod(abs(hashtext(ROW(keys)::text)::bigint), count) = i (the same on every
 * server). For keys without a usable order or with heavy skew in ranges.
 * @p key_columns as in cb_key_range_options (@p nkeys 0: NULL-terminated).
 */
int cb_partition_hash(json_t *out, const char *const *key_columns, size_t nkeys, size_t count,
		      cb_error *err);

/**
 * Append @p count identical partitions {} to @p out: for a work-queue step
 * (cb_pg_queue_reader_new) drained by @p count workers at once.
 */
int cb_partition_copies(json_t *out, size_t count, cb_error *err);

#define CB_WORKER_OPTIONS_VERSION 1

/** Options of cb_worker_run. */
typedef struct cb_worker_options {
	unsigned int version; /**< CB_WORKER_OPTIONS_VERSION */
	/** Jobs to work for (borrowed names); NULL/0: every job of the registry. */
	const char *const *job_names;
	size_t njobs;
	unsigned int threads; /**< partitions run at once, each on its own connection; 0: 1 */
	/** Return after this many seconds without work; 0 or less: run until signalled. */
	double exit_when_idle_seconds;
	/** Lease of a claimed partition, seconds; 0: the job's lease (lock.h). */
	double lease_seconds;
	/**
	 * Non-zero: SIGINT/SIGTERM make the worker hand its partitions back
	 * after their current chunk (another worker resumes them) and return.
	 */
	int handle_signals;
	/** Non-zero: one line per claimed and finished partition on stderr. */
	int verbose;
} cb_worker_options;

/** Worker options with every member zero but the version. */
#define CB_WORKER_OPTIONS_INIT                                                                     \
	{                                                                                          \
		.version = CB_WORKER_OPTIONS_VERSION                                               \
	}

/**
 * What a worker did. Every claimed partition is counted once more in
 * exactly one of the other members: claimed = completed + failed + stopped
 * + handed_back.
 */
typedef struct cb_worker_result {
	long long claimed;   /**< partitions claimed (a takeover counts) */
	long long completed; /**< of those, completed by this worker */
	/**
	 * Ended FAILED here, or lost: taken over by another claimant (fenced),
	 * or its end could not be recorded (its lease runs out and another
	 * claimant resumes it).
	 */
	long long failed;
	long long handed_back; /**< handed back on a signal, unfinished */
	long long stopped;     /**< ended STOPPED here: its execution was stopped */
} cb_worker_result;

struct cb_registry;

/**
 * Run partitions of running executions of the registry's jobs until idle
 * for opts->exit_when_idle_seconds or signalled. Each thread opens its own
 * connection with the parameters of @p like (borrowed; used for nothing
 * else). @return 0, CB_EINVAL (options, unknown job name), CB_EDB (no
 * connection could be made at the start; later losses are retried).
 */
int cb_worker_run(cb_worker_result *out, const struct cb_registry *reg, PGconn *like,
		  const cb_worker_options *opts, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
