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

/* ---- the server session behind a connection (pg/session.c) ---- */

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
 * prepared, no statement left behind on either session.
 * @return 0; CB_EDB with sqlstate CB003 ("transaction pooling is not
 * supported: ... use PgBouncer pool_mode=session, or connect directly");
 * CB_EDB when a query or the probe's connection fails.
 */
int cb__pg_session_exclusive(PGconn *conn, cb_error *err);

/* A prepared statement name unique to @p conn and never used by another
 * connection: "cb_<prefix>_<connection>_<n>" (lower-case letters, digits,
 * underscores; at most 63 bytes with a prefix of at most 20). */
void cb__conn_stmt_name(char *out, size_t size, PGconn *conn, const char *prefix);

/* ---- statements (pg/statement.c) ---- */

/*
 * Drop the prepared statement @p name (from cb_pg_prepare; "" is ignored) on
 * @p conn, when the connection is usable and not in pipeline mode: a
 * long-lived process (the scheduler) reuses its connection for many runs.
 * Best effort; @p name is set to "".
 */
void cb__pg_deallocate(PGconn *conn, char *name);

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
 * delimiters. @p what and @p table name the writer and table in messages.
 * Array-typed columns are refused (unnest would flatten them).
 * @return 0, CB_EINVAL (no such column), CB_EDB (no such table), CB_ENOMEM.
 */
int cb__pg_column_types(char **types, char *delims, PGconn *conn, const char *qualified,
			const char *const *names, size_t n, const char *what, const char *table,
			cb_error *err);

#endif
