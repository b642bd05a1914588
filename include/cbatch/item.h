/**
 * @file item.h
 * The plug-in interface of chunk steps: readers, processors and writers.
 *
 * Each is a versioned struct of function pointers with a state pointer that is
 * passed first to every call. The step engine enforces the lifecycle:
 *
 *     open(saved state) -> per chunk: [read x n -> process x n -> write -> update]
 *                       -> close -> free
 *
 * `update` runs inside the chunk transaction, so the position it saves commits
 * together with the chunk's data: a restart calls `open` with the object that
 * the last committed `update` filled. Writers receive the chunk's open
 * transaction and never commit or roll back themselves.
 *
 * Items are opaque pointers. An item returned by `read` must stay valid until
 * the chunk ends (commit or rollback); items a processor makes should come
 * from cb_chunk_alloc, which is reset when the chunk ends.
 *
 * Built-in readers and writers (readers.h, writers.h) fill these same structs;
 * a job author's own reader looks exactly like ours.
 */
#ifndef CBATCH_ITEM_H
#define CBATCH_ITEM_H

#include <stddef.h>
#include <jansson.h>
#include "error.h"
#include "params.h"
#include "pg.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a step execution tells its plug-ins. Borrowed; lives for the step. */
typedef struct cb_step_context cb_step_context;

/** The chunk being processed: an arena and the step context. Borrowed. */
typedef struct cb_chunk cb_chunk;

/** The job's name. */
const char *cb_step_context_job_name(const cb_step_context *sc);
/** The step's name. */
const char *cb_step_context_step_name(const cb_step_context *sc);
/** The job execution id (e.g. to stamp target rows). */
long long cb_step_context_job_execution_id(const cb_step_context *sc);
/** The step execution id. */
long long cb_step_context_step_execution_id(const cb_step_context *sc);
/** The execution's parameters (identifying and not). Borrowed. */
const cb_params *cb_step_context_params(const cb_step_context *sc);
/** The commit interval in items. */
size_t cb_step_context_chunk_size(const cb_step_context *sc);
/** The step's connection, for cb_pg_prepare in `open`. Borrowed. */
PGconn *cb_step_context_conn(const cb_step_context *sc);

/**
 * Allocate @p size bytes (aligned for any type) that live until the end of
 * the current chunk. No free: the arena is reset after commit or rollback and
 * reuses its memory, so a steady job allocates nothing per item.
 * @return the memory, or NULL when out of memory.
 */
void *cb_chunk_alloc(cb_chunk *chunk, size_t size);
/** The step context of this chunk. */
const cb_step_context *cb_chunk_step(const cb_chunk *chunk);

#define CB_READER_VERSION 1

/** A source of items. */
typedef struct cb_reader {
	unsigned int version; /**< CB_READER_VERSION */
	void *state;          /**< passed to every call; owned by the reader */
	/**
	 * Prepare to read. @p saved is what the last committed `update` stored
	 * (borrowed, may be NULL on a first run). Called outside any transaction.
	 */
	int (*open)(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err);
	/**
	 * Read the next item into @p item. Runs inside the chunk transaction.
	 * @return 0 with an item, CB_DONE at the end of input, or an error.
	 */
	int (*read)(void *state, cb_tx *tx, void **item, cb_error *err);
	/** Store the position after the last item read into @p out (a JSON object). */
	int (*update)(void *state, json_t *out, cb_error *err);
	/**
	 * Write a short description of @p item (e.g. its key, "id=42") for error
	 * messages into @p buf. May be NULL.
	 */
	void (*describe)(void *state, const void *item, char *buf, size_t size);
	/**
	 * Called when the chunk rolled back: rewind to the last position that
	 * committed. Note that `update` runs before the COMMIT, so the chunk being
	 * rolled back may already have been through `update`: keep the position
	 * an update saves as pending, and treat it as committed only at the next
	 * `read` (which the engine calls only after a successful commit). It is
	 * called only for a chunk in which `read` was called. May be
	 * NULL for readers that cannot rewind (the step then fails instead of
	 * retrying a chunk).
	 */
	void (*rollback)(void *state);
	/** Release what `open` acquired. May be NULL. */
	void (*close)(void *state);
	/** Free the state. May be NULL. */
	void (*free)(void *state);
} cb_reader;

#define CB_PROCESSOR_VERSION 1

/** Transforms, validates or filters items. */
typedef struct cb_processor {
	unsigned int version; /**< CB_PROCESSOR_VERSION */
	void *state;
	/**
	 * Process one item. Set @p out to the item to write (the input itself,
	 * or one from cb_chunk_alloc), or to NULL to filter it out (counted in
	 * filter_count). Return a negative code with a message to fail the chunk.
	 */
	int (*process)(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err);
	/** Free the state. May be NULL. */
	void (*free)(void *state);
} cb_processor;

#define CB_WRITER_VERSION 1

/** A sink of items. */
typedef struct cb_writer {
	unsigned int version; /**< CB_WRITER_VERSION */
	void *state;
	/** Prepare to write; @p saved as for the reader. May be NULL. */
	int (*open)(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err);
	/**
	 * Write @p n items (n >= 1) in the chunk transaction. A PostgreSQL
	 * writer queues its statements with cb_tx_send; results arrive at commit.
	 */
	int (*write)(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err);
	/** Store the writer's position into @p out. May be NULL. */
	int (*update)(void *state, json_t *out, cb_error *err);
	/** Release what `open` acquired. May be NULL. */
	void (*close)(void *state);
	/** Free the state. May be NULL. */
	void (*free)(void *state);
	/*
	 * Writers whose output lives outside the database transaction (files)
	 * need to hear about its outcome; database writers leave these NULL.
	 */
	/**
	 * The chunk rolled back (after write, perhaps after update): undo its
	 * output. Called only for a chunk in which this writer's `write` was
	 * called, so a writer may take its previous `update` as committed when
	 * `write` is next called (the engine calls it only after a COMMIT).
	 */
	void (*rollback)(void *state);
	/** Item-by-item scan: called before each item is written under a savepoint. */
	void (*savepoint)(void *state);
	/** Item-by-item scan: the item since the last savepoint was rolled back (skipped). */
	void (*rollback_to_savepoint)(void *state);
	/**
	 * The step's last chunk committed: finish the output (fsync, publish an
	 * atomic file) before the step is recorded COMPLETED. A failure fails
	 * the step, which stays restartable.
	 */
	int (*complete)(void *state, cb_error *err);
	/**
	 * Write the chunk's filtered items: the items read whose processor set
	 * its output to NULL (borrowed, @p n >= 1), in the chunk transaction,
	 * after `write`, e.g. to mark their source rows as done so that a rerun
	 * does not read and filter them again. Not called for a chunk without
	 * filtered items. May be NULL.
	 */
	int (*write_filtered)(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err);
} cb_writer;

#ifdef __cplusplus
}
#endif
#endif
