/*
 * The PostgreSQL toolkit's internal interface (pg/): what the layers above
 * it (repository, engine, readers, writers, console, CLI) share about
 * connections, sessions and statements, beside the public side in
 * include/cbatch/pg.h, sys/tx.h and sys/conn.h. Never installed. The chunk
 * transaction's internal side is pg/tx.h.
 */
#ifndef CB_PG_PGKIT_H
#define CB_PG_PGKIT_H

#include <stddef.h>
#include <libpq-fe.h>
#include "cbatch/error.h"
#include "cbatch/pg.h"
#include "cbatch/sys/tx.h"

/* ---- connecting (pg/connect.c) ---- */

/*
 * Open a connection as every cbatch program does (the body of the public
 * cb_cli_connect): @p conninfo if not NULL, else CBATCH_DB, else libpq's
 * PG* variables; server WARNINGs go to stderr; a failure's message never
 * shows a password. @p out receives a new connection (PQfinish it).
 * @return 0, CB_EINVAL (@p out NULL), CB_ENOMEM or CB_EDB.
 */
int cb__pg_connect(PGconn **out, const char *conninfo, cb_error *err);

/*
 * cb__pg_connect with @p application_name (NULL: the conninfo's, else
 * "cbatch") and @p options added to the connection's own (the conninfo's
 * "options", else PGOPTIONS): "-c name=value ..." settings that the server
 * applies to this session from its start, without a SET that a pooler could
 * hand on to another client. A pooler may refuse the "options" startup
 * parameter (PgBouncer does unless told to ignore it): the connection then
 * fails like any other. @return as cb__pg_connect.
 */
int cb__pg_connect_as(PGconn **out, const char *conninfo, const char *application_name,
		      const char *options, cb_error *err);

/*
 * After a failed connection to @p conninfo (NULL: CBATCH_DB, else libpq's
 * PG* variables): did a server refuse it for want of a read-write primary
 * just now (a switchover or failover under way: shutting down, starting up,
 * in recovery, or answering but read-only), rather than for a wrong address,
 * name or password? Decided by a second connection attempt of at most
 * @p seconds that reads SQLSTATEs and reported settings, never message
 * words (a server's follow its lc_messages). @return 1 or 0.
 */
int cb__pg_refused_for_now(const char *conninfo, double seconds);

/* ---- connections kept for the next run (pg/keep.c) ---- */

/* From now on, this process keeps the connections released by
 * cb__pg_release (a runner that runs one run after another). */
void cb__pg_keep_enable(void);

/* A kept idle connection opened with @p key (cb__pg_keep_mark), still
 * connected, or NULL. The caller owns it (release or PQfinish it). */
PGconn *cb__pg_keep_take(const char *key);

/* Remember that @p conn was opened with @p key, when keeping is on. */
void cb__pg_keep_mark(PGconn *conn, const char *key);

/* Whether this process keeps connections (cb__pg_keep_enable was called). */
int cb__pg_keeping(void);

/* Done with @p conn: PQfinish it, or, when keeping is on and it is idle and
 * marked, reset its session (prepared statements, LISTEN, settings) and keep
 * it. NULL is fine. */
void cb__pg_release(PGconn *conn);

/* The notice receiver of every connection cbatch opens: a server WARNING
 * (e.g. "canceling the wait for synchronous replication" during a failover)
 * as one "cbatch: server warning: ..." line on stderr; NOTICEs are dropped. */
void cb__pg_notice_receiver(void *arg, const PGresult *res);

/* ---- the server session behind a connection (pg/session.c) ---- */

/* What the repository's schema check found right on @p conn's session (its
 * fingerprint, repository/schema.c), or NULL; set NULL to forget it. A new
 * session (a reset) forgets it. */
const char *cb__conn_schema_memo(PGconn *conn);
void cb__conn_schema_memo_set(PGconn *conn, const char *fingerprint);

/* The session learned for @p conn, without a query (pipeline mode is fine).
 * @return 1 when known, 0 when not (*pid 0, *start NULL). */
int cb__conn_known_session(int *pid, const char **start, PGconn *conn);

/*
 * Record that @p conn's server session is backend @p backend_pid started at
 * @p backend_start (ISO 8601 UTC text), as read by the repository
 * (cb__conn_session). *pid and *start receive the recorded values (start
 * stays valid while the session does). Fails (CB_EDB, sqlstate CB003:
 * "transaction pooling is not supported") when another live connection of
 * this process has the same server session. @return 0, CB_EDB, CB_ENOMEM.
 */
int cb__conn_session_learned(int *pid, const char **start, PGconn *conn, int backend_pid,
			     const char *backend_start, cb_error *err);

/* The query that reads the server session behind a connection: its backend
 * pid and backend_start, in UTC with microseconds in ISO 8601 (read back
 * exactly whatever the session's DateStyle and TimeZone). One row. */
#define CB__SESSION_SQL                                                                            \
	"SELECT a.pid, to_char(a.backend_start AT TIME ZONE 'UTC', "                               \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "                                                    \
	"FROM pg_stat_get_activity(pg_backend_pid()) a"

/*
 * Refuse a pooler in transaction or statement mode in front of @p conn's
 * server, before a command does anything on it: what run refuses when its
 * heartbeat's connection finds the job's server session, checked up front
 * for every command. A second connection like @p conn (a probe, closed
 * before returning) reads its server session inside a transaction: the same
 * session as @p conn's is shared between clients; then @p conn reads its
 * own again while the probe holds its session: another session means the
 * pooler moved @p conn between transactions. A direct connection and a
 * session pooler pass both. A probe that gets no server session within 2 s
 * (a session pooler with every server taken, this connection's among them)
 * is no sign of transaction pooling: passed. Nothing is set, nothing
 * prepared, no statement left behind on either session. Once @p conn passed,
 * a later check of it (a kept connection's next run) only reads its session
 * again: the same one passes, another is refused as moved. A reset
 * (PQreset: a reconnect ridden through) starts the check over.
 * @return 0; CB_EDB with sqlstate CB003 ("transaction pooling is not
 * supported: ... use PgBouncer pool_mode=session, or connect directly");
 * CB_EDB when a query or the probe's connection fails.
 */
int cb__pg_session_exclusive(PGconn *conn, cb_error *err);

/* A prepared statement name unique to @p conn and never used by another
 * connection: "cb_<prefix>_<connection>_<n>" (lower-case letters, digits,
 * underscores; at most 63 bytes with a prefix of at most 20). */
void cb__conn_stmt_name(char *out, size_t size, PGconn *conn, const char *prefix);

/*
 * A chunk step on two connections (chunk.connections = 2): every statement
 * that cb_pg_prepare prepares on @p conn is prepared on @p mirror too, under
 * the same name, and cb__pg_deallocate drops it on both, so that a reader or
 * writer prepared once in `open` can queue its statements in either
 * connection's transaction. NULL: none. @p mirror is borrowed: unset it
 * before it is closed.
 */
void cb__conn_mirror_set(PGconn *conn, PGconn *mirror);
PGconn *cb__conn_mirror(PGconn *conn);

/* ---- statements (pg/statement.c) ---- */

/*
 * Drop the prepared statement @p name (from cb_pg_prepare; "" is ignored) on
 * @p conn, when the connection is usable and not in pipeline mode: a
 * long-lived process (the scheduler) reuses its connection for many runs.
 * Best effort; @p name is set to "".
 */
void cb__pg_deallocate(PGconn *conn, char *name);

/* ---- the chunk transaction (pg/tx.c) ---- */

/*
 * How a statement's failure is told: called with the failed result (NULL
 * when it could not be sent, or the connection broke before it answered)
 * in place of the generic message, which names the prepared statement.
 * Sets @p err (cb_pg_error keeps the SQLSTATE and the code) and returns
 * its code.
 */
typedef int (*cb__tx_error_fn)(void *ctx, PGconn *conn, const PGresult *res, cb_error *err);

/*
 * cb_tx_send for a statement that can tell its own errors: @p on_error
 * (NULL: the generic message) describes a failure, and @p label (borrowed
 * until the result is read) names the statement in any other message (a
 * pipeline aborted by an earlier statement). The built-in writers use it,
 * so that a failure names the target table, column and key, never the
 * statement's internal name.
 */
int cb__tx_send_described(cb_tx *tx, const char *stmt_name, const char *label, int nparams,
			  const char *const *values, cb_result_fn on_result,
			  cb__tx_error_fn on_error, void *ctx, cb_error *err);

/* ---- errors (pg/error.c) ---- */

/*
 * The result handler's check for a writer statement: anything but a command
 * or row result is the statement's error, named @p label, prefixed by @p what.
 */
int cb__pg_result_check(const PGresult *res, PGconn *conn, const char *label, const char *what,
			cb_error *err);

/*
 * Did the failure in @p err lose the database rather than fail a statement:
 * @p conn is gone, or the server said so (class 08 connection exceptions,
 * 57P01-57P03 shutdown or not yet accepting, 25006 a read-only server: the
 * primary became a standby)? Such a failure is waited out and the work
 * redone from the last commit (framework/outage.c), never an item's fault.
 */
int cb__pg_lost(const cb_error *err, PGconn *conn);
/* @p msg (a server's or libpq's message, maybe several lines with a
 * "FATAL:  " prefix) as one line in cbatch's words into @p out: never a raw
 * libpq line in what cbatch prints. @return snprintf's. */
size_t cb__pg_message_line(char *out, size_t size, const char *msg);

/* ---- table options (pg/table.c) ---- */

/*
 * Check a list of @p n names (columns, key columns): none NULL or empty,
 * none given twice. Messages start "@p what on \"@p table\": " (or
 * "@p what: " when @p table is NULL) and name the entry as @p label.
 * @return 0 or CB_EINVAL.
 */
int cb__pg_check_names(const char *const *v, size_t n, const char *what, const char *table,
		       const char *label, cb_error *err);

/*
 * Quote "schema"."table" (or "table" when @p schema is NULL) for SQL text.
 * @p out receives a new string (free). @return 0, CB_EINVAL, CB_ENOMEM.
 */
int cb__pg_qualified_name(char **out, PGconn *conn, const char *schema, const char *table,
			  cb_error *err);

/*
 * Look up the types of columns @p names[0..n-1] of the table @p qualified
 * (quoted SQL text, from cb__pg_qualified_name). @p types receives n new
 * strings (format_type, ready for SQL text: free each), @p delims n element
 * delimiters. @p colls (NULL: not wanted) receives per column a new
 * " COLLATE schema.name" clause to put after the array parameter's cast, or
 * NULL when the column has its type's own collation: an array parameter
 * carries its type's collation, and the statement's own comparisons of the
 * values (GROUP BY, DISTINCT, min/max) must use the column's. @p what and
 * @p table name the writer and table in messages. Array-typed columns are
 * refused (unnest would flatten them).
 * @return 0, CB_EINVAL (no such column), CB_EDB (no such table), CB_ENOMEM.
 */
int cb__pg_column_types(char **types, char *delims, char **colls, PGconn *conn,
			const char *qualified, const char *const *names, size_t n, const char *what,
			const char *table, cb_error *err);

/*
 * How ON CONFLICT (@p keys[0..nkeys-1]) of table @p qualified compares the
 * keys: by its arbiters, the valid, non-partial unique indexes on exactly
 * these columns. Where there is one (or several that agree), @p colls[k]
 * (a clause from cb__pg_column_types, replaced: free it) becomes the
 * index's collation clause, and @p image[k] 1 when equal values of key k
 * are always identical (B-tree equalimage: integers, deterministic text...),
 * 0 when equal values may differ (a nondeterministic collation, numeric 1.0
 * and 1.00, citext, interval...) or nothing is known. Refused, naming the
 * table, column and index: an arbiter whose equality is not the type's
 * default one (which the statement's GROUP BY would use), or two arbiters
 * with different collations. @return 0, CB_EINVAL, CB_EDB, CB_ENOMEM.
 */
int cb__pg_key_equality(char **colls, int *image, PGconn *conn, const char *qualified,
			const char *const *keys, size_t nkeys, const char *what, const char *table,
			cb_error *err);

/* ---- the catalog, for the preflight checks (pg/catalog.c, pg/table.c) ---- */

/* A table (or view) and its columns, as the catalog has them. */
typedef struct cb__pg_rel {
	PGresult *res; /* owned: one row per column */
	int ncols;
	char relkind;   /* pg_class.relkind: 'r' table, 'p' partitioned, 'v' view... */
	char name[200]; /* "schema.table" as the options name it, for messages */
} cb__pg_rel;

/*
 * Look up table @p schema.@p table (schema NULL: by the search_path, as an
 * unqualified statement would) in the catalog; a missing table is not an
 * error of the database but CB_EINVAL "@p what: table "t" does not exist".
 * @return 0 (free with cb__pg_rel_free), CB_EINVAL, CB_EDB, CB_ENOMEM.
 */
int cb__pg_rel_load(cb__pg_rel *r, PGconn *conn, const char *schema, const char *table,
		    const char *what, cb_error *err);
/* Release @p r's result. NULL-safe. */
void cb__pg_rel_free(cb__pg_rel *r);
/* The index of column @p name (exact), or -1. */
int cb__pg_rel_column(const cb__pg_rel *r, const char *name);
/*
 * The index of column @p name, or CB_EINVAL "@p what: @p label "x" does not
 * exist (columns: a, b, ...)" (@p label NULL: "column").
 */
int cb__pg_rel_need(const cb__pg_rel *r, const char *name, const char *what, const char *label,
		    cb_error *err);
/* Column @p col's type (format_type, borrowed from @p r). */
const char *cb__pg_rel_type(const cb__pg_rel *r, int col);
/* The type under a domain (format_type), else the column's type. */
const char *cb__pg_rel_base_type(const cb__pg_rel *r, int col);
/* pg_type.typcategory of the base type: 'N' numeric, 'S' string, 'D' date/time... */
char cb__pg_rel_category(const cb__pg_rel *r, int col);
/* Non-zero when the base type has an order (max, min, greatest, least). */
int cb__pg_rel_ordered(const cb__pg_rel *r, int col);

/*
 * Does a value of SQL type @p source (format_type text) lose something,
 * silently, when the writers cast it to @p target (a column's base type):
 * a time of day in a date, a zone in a timestamp without one, decimal
 * places, characters beyond a length; or a fraction that an integer column
 * refuses at chunk time? @p why receives the reason. @return 1 or 0.
 */
int cb__pg_lossy(char *why, size_t size, const char *source, const char *target);

/*
 * Does PostgreSQL assign a value of type @p source to a column of type
 * @p target (both format_type text) in an INSERT ... SELECT: the same type,
 * an assignment or implicit cast, or a string target? Sets @p ok.
 * @return 0, CB_EDB.
 */
int cb__pg_assignable(int *ok, PGconn *conn, const char *source, const char *target, cb_error *err);

/*
 * Has table @p qualified an arbiter for ON CONFLICT (@p keys): a valid,
 * non-partial unique index (or constraint) on exactly these columns? Sets
 * @p found. @return 0, CB_EDB.
 */
int cb__pg_has_arbiter(int *found, PGconn *conn, const char *qualified, const char *const *keys,
		       size_t nkeys, cb_error *err);

#endif
