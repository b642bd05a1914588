/*
 * Connections kept for the next run of a long-lived process (a scheduler
 * node's runner, framework/runner.c).
 *
 * A run opens its repository connection and its heartbeat's and closes both
 * at its end. In a fresh process, each is a new server backend whose catalog
 * caches and PL/pgSQL functions start cold: that, not the run's statements,
 * is most of what a short run costs the server. A process that runs one run
 * after another turns keeping on; from then, a connection released by a run
 * (cb__pg_release) is reset and kept, and the next connection opened with the
 * same parameters is that one. Nothing else changes: the caller still gets a
 * connection of its own, with no statement prepared and nothing listened to
 * or set on its session.
 *
 * What a kept connection was opened with lives in libpq instance data (an
 * event procedure), so a caller that PQfinish'es a connection instead of
 * releasing it leaves nothing behind here.
 */
#include "pgkit.h"

#include "clock.h"

#include <libpq-events.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Idle connections kept at most: a run holds two (its own and its heartbeat's). */
#define KEEP_MAX 4

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static int keeping;
static PGconn *idle[KEEP_MAX];
static size_t nidle;

static int keep_event(PGEventId id, void *info, void *pass)
{
	(void)pass;
	if (id == PGEVT_CONNDESTROY)
		free(PQinstanceData(((PGEventConnDestroy *)info)->conn, keep_event));
	return 1;
}

void cb__pg_keep_enable(void)
{
	pthread_mutex_lock(&keep_mu);
	keeping = 1;
	pthread_mutex_unlock(&keep_mu);
}

int cb__pg_keeping(void)
{
	int k;

	pthread_mutex_lock(&keep_mu);
	k = keeping;
	pthread_mutex_unlock(&keep_mu);
	return k;
}

/* The server closed it while it was idle (a restart, a terminated backend):
 * the close is waiting to be read. */
static int gone(PGconn *conn)
{
	struct pollfd p = { PQsocket(conn), POLLIN, 0 };

	if (PQstatus(conn) != CONNECTION_OK || p.fd < 0)
		return 1;
	if (cb__clock_poll(&p, 1, 0) > 0 &&
	    (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK))
		return 1;
	return 0;
}

PGconn *cb__pg_keep_take(const char *key)
{
	PGconn *found = NULL, *stale[KEEP_MAX];
	size_t nstale = 0;

	pthread_mutex_lock(&keep_mu);
	for (size_t i = 0; keeping && i < nidle && !found;) {
		const char *k = PQinstanceData(idle[i], keep_event);

		if (!k || strcmp(k, key) != 0) {
			i++;
			continue;
		}
		found = idle[i];
		idle[i] = idle[--nidle];
		if (gone(found)) {
			stale[nstale++] = found;
			found = NULL;
		}
	}
	pthread_mutex_unlock(&keep_mu);
	for (size_t i = 0; i < nstale; i++)
		PQfinish(stale[i]);
	return found;
}

void cb__pg_keep_mark(PGconn *conn, const char *key)
{
	char *k;

	if (!conn || !key)
		return;
	pthread_mutex_lock(&keep_mu);
	if (!keeping || PQinstanceData(conn, keep_event)) {
		pthread_mutex_unlock(&keep_mu);
		return;
	}
	pthread_mutex_unlock(&keep_mu);
	if (!(k = strdup(key)))
		return;
	if (!PQregisterEventProc(conn, keep_event, "cbatch-keep", NULL) ||
	    !PQsetInstanceData(conn, keep_event, k))
		free(k);
}

void cb__pg_release(PGconn *conn)
{
	PGresult *res;
	int keep;

	if (!conn)
		return;
	pthread_mutex_lock(&keep_mu);
	keep = keeping && nidle < KEEP_MAX && PQinstanceData(conn, keep_event);
	pthread_mutex_unlock(&keep_mu);
	if (!keep || PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE ||
	    PQpipelineStatus(conn) != PQ_PIPELINE_OFF) {
		PQfinish(conn);
		return;
	}
	/* What a run may have left on its session. Its plans and the server's
	 * caches stay: they are what keeping is for. */
	res = PQexec(conn, "DEALLOCATE ALL; UNLISTEN *; RESET ALL");
	keep = PQresultStatus(res) == PGRES_COMMAND_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;
	PQclear(res);
	while ((res = PQgetResult(conn)) != NULL)
		PQclear(res);
	if (keep) {
		PGnotify *note;

		while ((note = PQnotifies(conn)) != NULL)
			PQfreemem(note);
		pthread_mutex_lock(&keep_mu);
		if (nidle < KEEP_MAX) {
			idle[nidle++] = conn;
			conn = NULL;
		}
		pthread_mutex_unlock(&keep_mu);
	}
	PQfinish(conn);
}
