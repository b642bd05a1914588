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

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** What a step execution tells its plug-ins. Borrowed; lives for the step. */
typedef struct cb_step_context cb_step_context;

/** The chunk being processed: an arena and the step context. Borrowed. */
typedef struct cb_chunk cb_chunk;

/**
 * The number of elements of an array (not a pointer), e.g. for option
 * members such as `columns` / `ncolumns`:
 *
 *     static const char *const cols[] = { "id", "amount" };
 *     o.columns = cols; o.ncolumns = CB_COUNT(cols);
 *
 * The built-in readers and writers also accept NULL-terminated lists: when
 * a count is 0 and its list is not NULL, the list is counted up to its
 * first NULL (see each option struct for the exceptions).
 */
#define CB_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/**
 * The length of a list of strings as the built-in readers and writers take
 * it: @p n when it is not 0, else the number of entries of @p list before
 * its first NULL (0 for a NULL list). @p list is borrowed.
 */
size_t cb_list_count(const char *const *list, size_t n);

/** The job's name (borrowed from the engine; lives for the step). */
const char *cb_step_context_job_name(const cb_step_context *sc);
/** The step's name. */
const char *cb_step_context_step_name(const cb_step_context *sc);
/** The job instance id: the same in every execution (restart) of the instance. */
long long cb_step_context_job_instance_id(const cb_step_context *sc);
/** The job execution id (e.g. to stamp target rows). */
long long cb_step_context_job_execution_id(const cb_step_context *sc);
/** The step execution id. */
long long cb_step_context_step_execution_id(const cb_step_context *sc);
/** The execution's parameters (identifying and not). Borrowed. */
const cb_params *cb_step_context_params(const cb_step_context *sc);
/**
 * The value of the execution's parameter @p name as text (borrowed, lives
 * for the step: a string as given, a long or double in decimal, a date as
 * YYYY-MM-DD), or NULL when there is none. Shorthand for
 * cb_params_get(cb_step_context_params(sc), name).
 */
const char *cb_step_param(const cb_step_context *sc, const char *name);
/**
 * The long parameter @p name, or @p dflt when there is none or it is not a
 * long. (Declare the parameter with cb_job_add_param for its type to be
 * checked at launch.)
 */
long long cb_step_param_long(const cb_step_context *sc, const char *name, long long dflt);
/** The double parameter @p name (a long is converted), or @p dflt as cb_step_param_long. */
double cb_step_param_double(const cb_step_context *sc, const char *name, double dflt);
/** The commit interval in items. */
size_t cb_step_context_chunk_size(const cb_step_context *sc);
/** The step's connection, for cb_pg_prepare in `open`. Borrowed. */
PGconn *cb_step_context_conn(const cb_step_context *sc);

/**
 * Non-zero when @p sc is a preflight's (cb_job_check, and every launch
 * before it records anything): `build` is then called to make the parts
 * whose `check` hooks run, and they are freed without being opened. A build
 * must have no side effect (no file, no row); one that needs what only a
 * run has (an earlier step's job context, a partition) may fail in a check:
 * the step is then not checked, and the run builds it as before.
 */
int cb_step_context_checking(const cb_step_context *sc);

/**
 * In a check (cb_step_context_checking): record that the items of this
 * step's reader carry column @p column with values of the SQL type @p type
 * (format_type text, e.g. "timestamp with time zone"), so that a writer
 * binding that column by name (cb_bind_row_by_name) can refuse a lossy
 * assignment. Both strings are copied. Outside a check it does nothing.
 * @return 0, CB_EINVAL (NULL argument), CB_ENOMEM.
 */
int cb_step_context_set_source_type(const cb_step_context *sc, const char *column,
				    const char *type);

/**
 * The SQL type recorded for source column @p column by the step's reader in
 * a check (borrowed, lives for the check), or NULL when none was recorded
 * (not a check, a reader that does not say, or no such column).
 */
const char *cb_step_context_source_type(const cb_step_context *sc, const char *column);

/**
 * Allocate @p size bytes (aligned for any type) that live until the end of
 * the current chunk. No free: the arena is reset after commit or rollback and
 * reuses its memory, so a steady job allocates nothing per item.
 * @return the memory, or NULL when out of memory.
 */
void *cb_chunk_alloc(cb_chunk *chunk, size_t size);
/** The step context of this chunk. */
const cb_step_context *cb_chunk_step(const cb_chunk *chunk);

/*
 * Versions. Each plug-in struct carries the version it was written for; the
 * step accepts every version from 1 to the current one and reads only the
 * members that the plug-in's version has (members added later are marked
 * "since version N"). Start from the INIT macro, which sets the current
 * version and zeroes the rest, and set members by name:
 *
 *     cb_processor p = CB_PROCESSOR_INIT;
 *     p.process = validate;
 *
 * or use a designated initializer, `{ .version = CB_PROCESSOR_VERSION,
 * .process = validate }`.
 */

/**
 * The reader's version: 2 added `check`, 3 `overlap_safe`. Readers of older
 * versions still work.
 */
#define CB_READER_VERSION 3

/** A reader with every member NULL (set at least `read`). */
#define CB_READER_INIT                                                                             \
	{                                                                                          \
		.version = CB_READER_VERSION                                                       \
	}

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
	 * A reader that wants its chunk to end before the chunk size (a work
	 * queue whose claim came back short of it while the input goes on)
	 * returns CB_CHUNK_END: the chunk commits with the items read so far and
	 * the next chunk reads again. CB_CHUNK_END with no item read in the chunk
	 * is not the end of input either: the (empty) chunk is rolled back and
	 * the next one begins, so return it only after an item.
	 * @return 0 with an item, CB_DONE at the end of input, CB_CHUNK_END, or
	 *         an error.
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
	/**
	 * Since version 2: check the configuration against the database before
	 * the launch records anything (the preflight, cb_job_check): the table,
	 * its columns, their types. Called on a reader that was built but never
	 * opened, on the launch's connection inside a READ ONLY transaction
	 * that is then rolled back (cb_step_context_conn; catalog queries only,
	 * nothing prepared by name, no file created). The step
	 * context is a check's (cb_step_context_checking): no execution ids, no
	 * partition, an empty job context. A reader may tell the writers the
	 * SQL types of the columns its items carry (cb_step_context_set_source_type).
	 * @return 0, or CB_EINVAL with a message naming the table, column and
	 *         what is wrong (the launch exits 2, nothing written), or another
	 *         negative code (the launch fails with it). May be NULL.
	 */
	int (*check)(void *state, const cb_step_context *sc, cb_error *err);
	/**
	 * Since version 3: non-zero when the reader can serve a step on two
	 * connections (cb_step_def `connections`): every statement of `read`
	 * goes through the cb_tx it is given, statements are prepared only with
	 * cb_pg_prepare in `open`, and the next chunk's read is right while the
	 * previous chunk has not committed yet (a keyset past its last key is;
	 * a claim whose end of input counts rows held elsewhere is not). Such a
	 * step never calls `rollback`: after a failure it closes the parts and
	 * opens them again from the last committed `update`.
	 */
	int overlap_safe;
} cb_reader;

/**
 * The processor's version: 2 added `open` and `close`. Version 1 processors
 * (without them) still work.
 */
#define CB_PROCESSOR_VERSION 2

/** A processor with every member NULL (set `process`). */
#define CB_PROCESSOR_INIT                                                                          \
	{                                                                                          \
		.version = CB_PROCESSOR_VERSION                                                    \
	}

/** Transforms, validates or filters items. */
typedef struct cb_processor {
	unsigned int version; /**< CB_PROCESSOR_VERSION */
	void *state;          /**< passed to every call; owned by the processor */
	/**
	 * Process one item. Set @p out to the item to write (the input itself,
	 * or one from cb_chunk_alloc), or to NULL to filter it out (counted in
	 * filter_count). Return a negative code with a message to fail the chunk.
	 */
	int (*process)(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err);
	/** Free the state. May be NULL. */
	void (*free)(void *state);
	/**
	 * Prepare once per step execution (since version 2): called after the
	 * reader and the writers opened and before the first chunk, outside any
	 * transaction, with the step context (borrowed; @p sc lives for the
	 * step). E.g. look up column positions in a header, or read a parameter.
	 * A failure fails the step; `close` is then not called. May be NULL.
	 */
	int (*open)(void *state, const cb_step_context *sc, cb_error *err);
	/** Release what `open` acquired (since version 2). May be NULL. */
	void (*close)(void *state);
} cb_processor;

/**
 * The writer's version: 2 added the outcome hooks `rollback`, `savepoint`,
 * `rollback_to_savepoint` and `complete`; 3 added `check`; 4 `overlap_safe`.
 * Writers of older versions (without them) still work.
 */
#define CB_WRITER_VERSION 4

/** A writer with every member NULL (set at least `write`). */
#define CB_WRITER_INIT                                                                             \
	{                                                                                          \
		.version = CB_WRITER_VERSION                                                       \
	}

/** A sink of items. */
typedef struct cb_writer {
	unsigned int version; /**< CB_WRITER_VERSION */
	void *state;          /**< passed to every call; owned by the writer */
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
	 * Since version 2: writers whose output lives outside the database
	 * transaction (files) need to hear about its outcome; database writers
	 * leave these NULL. The step reads them only from a version 2 writer.
	 */
	/**
	 * The chunk rolled back (after write, perhaps after update): undo its
	 * output (since version 2). Called only for a chunk in which this writer's `write` was
	 * called, so a writer may take its previous `update` as committed when
	 * `write` is next called (the engine calls it only after a COMMIT).
	 */
	void (*rollback)(void *state);
	/** Item-by-item scan: called before each item is written under a savepoint (since 2). */
	void (*savepoint)(void *state);
	/** Item-by-item scan: the item since the last savepoint was rolled back (since 2). */
	void (*rollback_to_savepoint)(void *state);
	/**
	 * The step's last chunk committed: finish the output (fsync, publish an
	 * atomic file) before the step is recorded COMPLETED. A failure fails
	 * the step, which stays restartable (since version 2).
	 */
	int (*complete)(void *state, cb_error *err);
	/**
	 * Write the chunk's filtered items: the items read whose processor set
	 * its output to NULL (borrowed, @p n >= 1), in the chunk transaction,
	 * after `write`, e.g. to mark their source rows as done so that a rerun
	 * does not read and filter them again. Not called for a chunk without
	 * filtered items. May be NULL (since version 2).
	 */
	int (*write_filtered)(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err);
	/**
	 * Since version 3: check the configuration before the launch records
	 * anything, as cb_reader's `check` (called after the reader's, in the
	 * writers' order): a database writer its table, columns, types, keys
	 * and modes; a file writer its directory and path, without creating
	 * the file. May be NULL.
	 */
	int (*check)(void *state, const cb_step_context *sc, cb_error *err);
	/**
	 * Since version 4: non-zero when the writer can serve a step on two
	 * connections (cb_step_def `connections`): every statement of `write`
	 * and `write_filtered` goes through the cb_tx it is given (cb_tx_send;
	 * cb_tx_copy is not), statements are prepared only with cb_pg_prepare
	 * in `open`, a result handler needs nothing of the items once `write`
	 * returned, and the writer has no output outside the transaction. Such
	 * a step calls no `rollback` hook while two chunks are in flight: after
	 * a failure it closes the parts and opens them again from the last
	 * committed `update`.
	 */
	int overlap_safe;
} cb_writer;

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
