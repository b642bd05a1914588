/**
 * @file step.h
 * Step definitions: chunk and tasklet steps, their parts, faults and
 * classifiers, listeners, and what a step can learn about earlier steps.
 *
 * A step is described by a cb_step_def that cb_job_add_step copies into a
 * job (job.h). A chunk step's `build` callback fills a cb_chunk_parts with
 * the reader, the optional processor and the writers (item.h) of one step
 * execution; a tasklet step is one callback called in a transaction until it
 * says CB_DONE.
 *
 * Lifecycle of the parts: build -> reader open -> writers open (in order) ->
 * processor open -> chunks -> processor close -> writers close -> reader
 * close -> free of each. The step owns what build put in the parts from the
 * moment build returns, even when it returns an error.
 */
#ifndef CBATCH_STEP_H
#define CBATCH_STEP_H

#include <stddef.h>
#include <jansson.h>
#include "error.h"
#include "item.h"
#include "pg.h"
#include "repository.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** The most writers a chunk step may have; they run in order, in one transaction. */
#define CB_MAX_WRITERS 8
/** Commit interval used when a step does not set one. */
#define CB_DEFAULT_CHUNK_SIZE 1000

/**
 * What a chunk step's build callback fills in. The step owns what is put
 * here from the moment build returns (even if it returns an error): it calls
 * each component's `free`. The struct stays at the address build was given
 * for as long as its parts live, so a processor may keep a pointer to
 * `reader` (e.g. to ask cb_csv_reader_header in its `open`).
 */
typedef struct cb_chunk_parts {
	cb_reader reader;                  /**< required */
	cb_processor processor;            /**< optional: zeroed means pass-through */
	cb_writer writers[CB_MAX_WRITERS]; /**< use cb_chunk_parts_add_writer */
	size_t nwriters;                   /**< number of writers in use */
} cb_chunk_parts;

/**
 * Append @p writer to @p parts. The parts steal the writer (its state is
 * freed with the step), also when this fails: then its `free` is called at
 * once. Only the members of the writer's version are copied (a version 1
 * writer compiled against an older header is fine).
 * @return 0, or CB_EINVAL (unknown version, no write function, already
 *         CB_MAX_WRITERS writers) with a message naming the writer's index.
 */
int cb_chunk_parts_add_writer(cb_chunk_parts *parts, const cb_writer *writer, cb_error *err);

/** The two kinds of steps. */
typedef enum cb_step_kind {
	CB_STEP_CHUNK = 0,  /**< read, process, write in chunks (cb_step_def.build) */
	CB_STEP_TASKLET = 1 /**< one callback until done (cb_step_def.tasklet) */
} cb_step_kind;

/** Where a chunk step's item failed. */
typedef enum cb_fault {
	CB_FAULT_READ = 0,    /**< the reader's read */
	CB_FAULT_PROCESS = 1, /**< the processor's process */
	CB_FAULT_WRITE = 2    /**< a writer's write, or the commit */
} cb_fault;

/** What to do about a failure, as a classifier decides. */
typedef enum cb_fault_action {
	CB_FAULT_FAIL = 0, /**< roll back the chunk and fail the step */
	CB_FAULT_SKIP = 1, /**< skip the item (counted; over the skip limit the step fails) */
	CB_FAULT_RETRY = 2 /**< roll back and retry the chunk (up to the retry limit) */
} cb_fault_action;

/**
 * Decides what a failure means. @p err (borrowed) holds the code, SQLSTATE
 * and message. Called for read, process and write failures separately
 * (@p fault), with the step definition's `user`.
 */
typedef cb_fault_action (*cb_classify_fn)(void *user, cb_fault fault, const cb_error *err);

/**
 * The default classifier: CB_ERETRY (SQLSTATE 40001 serialization failure,
 * 40P01 deadlock, 55P03 lock timeout), a lost connection (SQLSTATE class 08)
 * and an administrator shutdown (57P01) are RETRY; everything else FAIL.
 * @p user is not used.
 */
cb_fault_action cb_classify_default(void *user, cb_fault fault, const cb_error *err);

/**
 * As cb_classify_default, but bad input — CB_EINVAL from a reader or
 * processor, and data errors from the database (SQLSTATE classes 22 data
 * exception and 23 integrity constraint violation) in writes — is SKIP.
 */
cb_fault_action cb_classify_skip_invalid(void *user, cb_fault fault, const cb_error *err);

/**
 * Version 2 added `partition` and `partitions`; version 3 `revision`;
 * version 4 `connections`.
 */
#define CB_STEP_DEF_VERSION 4

/**
 * A step definition. Strings are copied by cb_job_add_step; @p user is
 * borrowed and must outlive the job. Initialise with CB_STEP_DEF_INIT and
 * set the members by name.
 */
typedef struct cb_step_def {
	unsigned int version; /**< CB_STEP_DEF_VERSION */
	const char *name;     /**< unique within the job */
	cb_step_kind kind;    /**< CB_STEP_CHUNK by default */
	/**
	 * Commit interval of a chunk step; 0 means CB_DEFAULT_CHUNK_SIZE. A long
	 * parameter `chunk.size` (usually non-identifying: `-chunk.size:long=500`)
	 * overrides it for one execution.
	 */
	size_t chunk_size;
	/**
	 * Chunk steps: create the reader, processor and writers for one step
	 * execution (parameters are in @p sc, see cb_step_param). Called before
	 * anything is read, and again after a retry had to reconnect.
	 */
	int (*build)(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err);
	/**
	 * Tasklet steps: do one unit of work inside @p tx (not pipelined: plain
	 * libpq calls on cb_tx_conn(tx) are fine). Return CB_DONE when finished,
	 * 0 to be called again in a new transaction, or a negative code to fail.
	 * @p context is the step's execution context (a JSON object, borrowed):
	 * changes to it are saved in the same transaction.
	 */
	int (*tasklet)(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
		       cb_error *err);
	void *user; /**< passed to build, tasklet and classify (borrowed) */
	/** Non-zero: run this step again on restart even if it completed (e.g. a cleanup). */
	int allow_start_if_complete;
	/**
	 * Most items a chunk step may skip (read + process + write) before it
	 * fails; 0: none. A long parameter `skip.limit` overrides it per run.
	 */
	unsigned int skip_limit;
	/** Most retries of one chunk for a RETRY failure; 0: none. */
	unsigned int retry_limit;
	/** Backoff before the first retry, doubled each time (ms); 0: 100. */
	unsigned int retry_backoff_ms;
	/** The classifier; NULL: cb_classify_default. Called with @p user. */
	cb_classify_fn classify;
	/** Most executions of this step in one job instance; 0: unlimited. */
	unsigned int start_limit;
	/**
	 * Since version 2. Non-NULL makes a chunk step partitioned (partition.h):
	 * append @p count partition objects (JSON objects, e.g. with
	 * cb_partition_key_ranges) to the array @p out, or fewer. Called once per
	 * job instance, when the step first starts, on the launching process's
	 * connection (cb_step_context_conn; no step execution exists yet). A
	 * restart reuses the partitions recorded then.
	 */
	int (*partition)(void *user, const cb_step_context *sc, size_t count, json_t *out,
			 cb_error *err);
	/**
	 * Since version 2. Partitions to ask for; 0: 4. A long parameter
	 * `partition.count` overrides it per instance.
	 */
	unsigned int partitions;
	/**
	 * Since version 3. Partitioned steps: a name for this revision of what
	 * a partition does (e.g. "2"), or NULL. It goes into the step's
	 * fingerprint (partition.h), with what the engine sees of the
	 * definition; the reader, processor and writers that `build` makes are
	 * not visible before a partition runs, so a program whose new build
	 * changes them sets a new revision, and workers of older programs then
	 * leave the new partitions to workers that have this one. Copied.
	 */
	const char *revision;
	/**
	 * Since version 4. Chunk steps: the connections its chunks run on, 1 or 2
	 * (0: 1). With 2, chunk N+1 is read, processed and written on the second
	 * connection while chunk N is still writing or committing on the first,
	 * so that two server backends work at once; the commits stay in chunk
	 * order (chunk N+1's checkpoint waits, in the server, for chunk N's
	 * COMMIT, and fails when N did not commit), so what is committed is
	 * always a prefix of the chunks, as with 1. Every part must say it can (`overlap_safe` in
	 * cb_reader and cb_writer: the built-in PostgreSQL keyset reader, upsert
	 * and status writers do); a step whose parts cannot is refused before
	 * the launch records anything. When anything fails with two chunks in
	 * flight, both roll back, the parts reopen from the last commit, and the
	 * next chunk runs alone, with the step's usual skip, retry and fail
	 * rules; two connections resume after it commits. Listeners then see
	 * before_chunk of N+1 before after_chunk of N. A long parameter
	 * `chunk.connections` overrides it per execution. Not for partitioned
	 * steps (each partition already has its own connection): ignored there.
	 */
	unsigned int connections;
} cb_step_def;

/** A chunk step definition with every member zero but the version. */
#define CB_STEP_DEF_INIT                                                                           \
	{                                                                                          \
		.version = CB_STEP_DEF_VERSION                                                     \
	}

/**
 * Set the step's exit status (e.g. "NOOP"), which transitions match on
 * (cb_job_add_transition). By default it is the step's status. May be called
 * by a tasklet, a processor (through cb_chunk_step) or a listener; the step
 * context is owned by the engine and this is the one field it lets plug-ins
 * change. @p exit_status is copied. @return 0 or CB_EINVAL (empty, longer
 * than 31 bytes, not valid UTF-8 or holding control characters).
 */
int cb_step_context_set_exit_status(const cb_step_context *sc, const char *exit_status);

/**
 * The job execution's context, shared by the steps (borrowed JSON object; a
 * step may change it). It is saved at every step end and with every tasklet
 * commit, and restored on restart.
 */
json_t *cb_step_context_job_context(const cb_step_context *sc);

/**
 * What the executions of one step did within the job instance, summed over
 * all of the instance's job executions (a step restarted three times counts
 * its three executions).
 */
typedef struct cb_step_summary {
	long long executions;      /**< step executions in the instance; 0: the step never ran */
	cb_status status;          /**< the newest execution's status (UNKNOWN if none) */
	long long read_count;      /**< items read */
	long long write_count;     /**< items written */
	long long filter_count;    /**< items the processor filtered out */
	long long skip_count;      /**< items skipped: read + process + write skips */
	long long duplicate_count; /**< duplicate target writes the writers absorbed */
	long long commit_count;    /**< chunks committed */
	long long rollback_count;  /**< chunks rolled back */
} cb_step_summary;

/**
 * Sum the executions of step @p step_name in this step's job instance into
 * @p out, e.g. for a report tasklet after a chunk step; the running step
 * counts what it has committed so far. Runs one query on the step's
 * connection (cb_step_context_conn): call it from a tasklet (the query joins
 * its transaction) or from a plug-in's `open`, never while a chunk is being
 * read or written (the connection is then in pipeline mode).
 * @return 0 (a step that never ran gives executions 0 and zero counts),
 *         CB_EINVAL (NULL argument), CB_EDB.
 */
int cb_step_context_step_summary(const cb_step_context *sc, const char *step_name,
				 cb_step_summary *out, cb_error *err);

#define CB_LISTENER_VERSION 1

/**
 * Callbacks around a job's life. Every member may be NULL. Listeners observe;
 * they cannot fail the job (return values are not used), except that
 * after_step may change the step's exit status with
 * cb_step_context_set_exit_status. Called in the launching thread. Arguments
 * are borrowed for the call. Initialise with CB_LISTENER_INIT.
 */
typedef struct cb_listener {
	unsigned int version; /**< CB_LISTENER_VERSION */
	void *ctx;            /**< passed first to every callback (borrowed) */
	/** Before the first step of an execution. */
	void (*before_job)(void *ctx, const char *job_name, long long job_execution_id);
	/** After the execution ended, with its status and exit message. */
	void (*after_job)(void *ctx, const char *job_name, long long job_execution_id,
			  cb_status status, const char *exit_message);
	/** Before a step execution runs. */
	void (*before_step)(void *ctx, const cb_step_context *sc);
	/** After a step execution ended with @p status. */
	void (*after_step)(void *ctx, const cb_step_context *sc, cb_status status);
	/** Before a chunk (or a tasklet call) begins. */
	void (*before_chunk)(void *ctx, const cb_step_context *sc);
	/** After the chunk committed. */
	void (*after_chunk)(void *ctx, const cb_step_context *sc);
	/** The chunk rolled back because of @p err. */
	void (*chunk_error)(void *ctx, const cb_step_context *sc, const cb_error *err);
	/** A read failed with @p err. */
	void (*read_error)(void *ctx, const cb_step_context *sc, const cb_error *err);
	/** Processing @p item failed with @p err. */
	void (*process_error)(void *ctx, const cb_step_context *sc, const void *item,
			      const cb_error *err);
	/** Writing @p n items failed with @p err. */
	void (*write_error)(void *ctx, const cb_step_context *sc, void *const *items, size_t n,
			    const cb_error *err);
	/** An item was skipped (@p item is NULL for read skips). */
	void (*skip)(void *ctx, const cb_step_context *sc, cb_fault fault, const void *item,
		     const cb_error *err);
} cb_listener;

/** A listener with every callback NULL. */
#define CB_LISTENER_INIT                                                                           \
	{                                                                                          \
		.version = CB_LISTENER_VERSION                                                     \
	}

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
