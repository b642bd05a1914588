/*
 * A bounded pool of repository connections shared by the server's threads.
 * Slots, not connections, are what is bounded: a borrower takes a free slot
 * (waiting at most the pool's wait), then opens its connection outside the
 * lock if the slot has none, so that a slow or failing connect never holds
 * up the other requests.
 */
#include "console.h"
#include "clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pgkit.h"

struct cb__pool {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	char *conninfo;
	int size;
	double wait;
	PGconn **idle; /* connections not borrowed (NULL: a slot without one) */
	int nidle;     /* free slots: idle[0..nidle) */
	int open;      /* connections that exist, borrowed or idle */
	int writes;    /* the console acts: keep no session that takes no writes */
};

int cb__pool_new(cb__pool **out, const char *conninfo, int size, double wait_seconds, int writes,
		 cb_error *err)
{
	cb__pool *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p || !(p->idle = calloc((size_t)size, sizeof(*p->idle))) ||
	    (conninfo && !(p->conninfo = strdup(conninfo)))) {
		if (p)
			free(p->idle);
		free(p);
		return cb_error_set(err, CB_ENOMEM, "out of memory for the connection pool");
	}
	pthread_mutex_init(&p->lock, NULL);
	/* Waits are measured on the monotonic clock: a clock step changes nothing. */
	cb__clock_cond_init(&p->freed);
	p->size = size;
	p->nidle = size;
	p->wait = wait_seconds;
	p->writes = writes;
	*out = p;
	return 0;
}

/* A new connection for the console: named in pg_stat_activity, no statement
 * may hold a request (and its slot) for long, and no parallel plan: every
 * query of the console is bounded by what it shows (integration.scale_plans),
 * and starting a parallel worker costs 20-30 ms, more than the query (a rare
 * job/status pair at 10M executions: 41 ms with a worker, 11 ms without).
 * All of it is asked for at connection start (the application name and the
 * "options" startup parameter), never by a SET: a session-level SET outlives
 * the console's transactions on the server session, which a pooler hands to
 * other clients (integration.lock_deploy). A pooler that refuses "options"
 * (PgBouncer) gets a connection without them: the server's defaults then. */
#define CONSOLE_OPTIONS "-c statement_timeout=30s -c max_parallel_workers_per_gather=0"

static int connect_one(PGconn **out, const char *conninfo, cb_error *err)
{
	cb_error first = CB_ERROR_INIT;

	if (cb__pg_connect_as(out, conninfo, "cbatch serve", CONSOLE_OPTIONS, &first) == 0)
		return 0;
	return cb__pg_connect_as(out, conninfo, "cbatch serve", NULL, err);
}

int cb__pool_get(cb__pool *p, PGconn **out, cb_error *err)
{
	double until = cb__clock_mono() + p->wait;
	PGconn *conn;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&p->lock);
	while (p->nidle == 0 && rc != ETIMEDOUT)
		rc = cb__clock_cond_wait(&p->freed, &p->lock, until);
	if (p->nidle == 0) {
		pthread_mutex_unlock(&p->lock);
		return cb_error_set(
			err, CB_ERETRY,
			"no repository connection became free within %.0f s (pool of %d)", p->wait,
			p->size);
	}
	conn = p->idle[--p->nidle];
	pthread_mutex_unlock(&p->lock);
	if (conn) {
		*out = conn;
		return 0;
	}
	if ((rc = connect_one(&conn, p->conninfo, err)) < 0) {
		pthread_mutex_lock(&p->lock);
		p->idle[p->nidle++] = NULL;
		pthread_cond_signal(&p->freed);
		pthread_mutex_unlock(&p->lock);
		return rc;
	}
	pthread_mutex_lock(&p->lock);
	p->open++;
	pthread_mutex_unlock(&p->lock);
	*out = conn;
	return 0;
}

/* Whether @p conn's server now refuses writes, as it last reported
 * (PostgreSQL 14+ reports both settings whenever they change, a reload or a
 * promotion included). A session kept on a primary that was turned standby,
 * or made read-only, while a proxy or a multi-host conninfo already leads new
 * sessions to the new primary, would fail every action until serve
 * restarted: a new session finds the primary. */
static int takes_no_writes(PGconn *conn)
{
	const char *standby = PQparameterStatus(conn, "in_hot_standby");
	const char *ro = PQparameterStatus(conn, "default_transaction_read_only");

	return (standby && strcmp(standby, "on") == 0) || (ro && strcmp(ro, "on") == 0);
}

void cb__pool_put(cb__pool *p, PGconn *conn)
{
	if (!conn)
		return;
	/* A connection the server dropped, or one a failed statement left inside
	 * a transaction, is no use to the next request. */
	if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE ||
	    (p->writes && takes_no_writes(conn))) {
		PQfinish(conn);
		conn = NULL;
	}
	pthread_mutex_lock(&p->lock);
	if (!conn)
		p->open--;
	p->idle[p->nidle++] = conn;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
}

int cb__pool_open_count(cb__pool *p)
{
	int n;

	pthread_mutex_lock(&p->lock);
	n = p->open;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void cb__pool_free(cb__pool *p)
{
	if (!p)
		return;
	/* Only after the server stopped: every slot is back. */
	for (int i = 0; i < p->nidle; i++)
		PQfinish(p->idle[i]);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->lock);
	free(p->idle);
	free(p->conninfo);
	free(p);
}
