/**
 * @file sys/conn.h
 * A second connection like an existing one, for reader and writer authors.
 *
 * A reader that must keep a cursor or a snapshot outside the chunk
 * transaction (the cursor reader does) opens its own session with the same
 * connection parameters as the step's. Not included by cbatch.h: include
 * `<cbatch/sys/conn.h>` explicitly.
 */
#ifndef CBATCH_SYS_CONN_H
#define CBATCH_SYS_CONN_H

#include <libpq-fe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/**
 * Open a new connection with @p like's parameters (host, port, database,
 * user, password, options...) and @p application_name, so that operators
 * can tell the session apart in pg_stat_activity.
 *
 * Ownership: @p like and @p application_name are borrowed; the result is a
 * new connection that the caller must PQfinish, whether it succeeded or not.
 *
 * @param like an open connection whose parameters are copied
 * @param application_name the new session's application_name
 * @return the new connection (check PQstatus: CONNECTION_OK or not), or
 *         NULL when libpq could not allocate it
 */
PGconn *cb_pg_connect_like(PGconn *like, const char *application_name);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
