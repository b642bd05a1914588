/*
 * The lease heartbeat. It runs on its own connection so that a chunk that
 * takes longer than the lease (one long statement on the job's connection)
 * does not lose the lock. It stops the job when the lock is no longer ours,
 * or when it could not extend the lease for longer than the lease: past that
 * point another process may legitimately have taken over.
 */
#include "heartbeat.h"
#include "cbatch/sys/conn.h"
#include "engine.h"
#include "clock.h"
#include "pgkit.h"
#include "repo.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cb__heartbeat {
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	atomic_int lost;
	char why[CB_ERROR_MESSAGE_MAX];
	PGconn *conn;
	PGconn *like;
	char *lock_name, *owner_id;
	long long token, job_execution_id;
	double lease;
	double patience; /* give up after this long without an extension */
	double renewed;  /* cb__clock_mono() of the last extension (under mu) */
};

static void mark_lost(cb__heartbeat *hb, const char *fmt, const char *detail)
{
	pthread_mutex_lock(&hb->mu);
	if (!atomic_load(&hb->lost)) {
		/* a long lock name or message is cut, not an error */
		if (snprintf(hb->why, sizeof(hb->why), fmt, hb->lock_name, detail) < 0)
			hb->why[0] = '\0';
		atomic_store(&hb->lost, 1);
	}
	pthread_mutex_unlock(&hb->mu);
}

/* Wait up to @p seconds or until stopped. Returns non-zero when stopped. */
static int pause_for(cb__heartbeat *hb, double seconds)
{
	double until = cb__clock_mono() + seconds;
	int stopped;

	pthread_mutex_lock(&hb->mu);
	while (!hb->stop) {
		if (cb__clock_cond_wait(&hb->cv, &hb->mu, until) == ETIMEDOUT)
			break;
	}
	stopped = hb->stop;
	pthread_mutex_unlock(&hb->mu);
	return stopped;
}

static void *beat(void *arg)
{
	cb__heartbeat *hb = arg;
	double interval = hb->lease / 3.0, last_ok = cb__clock_mono();

	if (interval < 0.05)
		interval = 0.05;
	while (!pause_for(hb, interval)) {
		cb_error err = CB_ERROR_INIT;
		int alive = 0, rc;

		if (!hb->conn || PQstatus(hb->conn) != CONNECTION_OK) {
			PQfinish(hb->conn);
			hb->conn = cb_pg_connect_like(hb->like, "cbatch-heartbeat");
		}
		rc = PQstatus(hb->conn) == CONNECTION_OK ?
			     cb__lock_heartbeat(&alive, hb->conn, hb->lock_name, hb->owner_id,
						hb->token, hb->lease, hb->job_execution_id, &err) :
			     cb_pg_error(&err, hb->conn, NULL, "heartbeat");
		if (rc == 0 && alive) {
			last_ok = cb__clock_mono();
			pthread_mutex_lock(&hb->mu);
			hb->renewed = last_ok;
			pthread_mutex_unlock(&hb->mu);
			continue;
		}
		if (rc == 0) {
			mark_lost(hb, "lock '%s' was taken over or released (%s)",
				  "its fencing token is no longer current");
			break;
		}
		if (hb->conn && PQstatus(hb->conn) == CONNECTION_OK &&
		    cb__pg_lost(&err, hb->conn)) {
			/* A session that is there but takes no writes (left on a
			 * demoted primary while new ones reach the new one): a new
			 * session at the next beat, not this one again until the
			 * patience runs out. */
			PQfinish(hb->conn);
			hb->conn = NULL;
		}
		if (cb__clock_mono() - last_ok > hb->patience) {
			mark_lost(hb,
				  "lock '%s': could not extend the lease for longer than the "
				  "lease and the outage budget: %s",
				  err.message);
			break;
		}
	}
	return NULL;
}

int cb__heartbeat_start(cb__heartbeat **out, PGconn *like, const char *lock_name,
			const char *owner_id, long long token, double lease_seconds,
			double patience, long long job_execution_id, cb_error *err)
{
	cb__heartbeat *hb = calloc(1, sizeof(*hb));

	*out = NULL;
	if (!hb)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	hb->lock_name = strdup(lock_name);
	hb->owner_id = strdup(owner_id);
	if (!hb->lock_name || !hb->owner_id) {
		free(hb->lock_name);
		free(hb->owner_id);
		free(hb);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	hb->like = like;
	hb->token = token;
	hb->lease = lease_seconds;
	hb->patience = patience > lease_seconds ? patience : lease_seconds;
	hb->job_execution_id = job_execution_id;
	hb->renewed = cb__clock_mono();
	pthread_mutex_init(&hb->mu, NULL);
	cb__clock_cond_init(&hb->cv);
	/* Connect here, in the caller's thread: a job that cannot open its
	 * heartbeat connection should not start. */
	hb->conn = cb_pg_connect_like(like, "cbatch-heartbeat");
	if (PQstatus(hb->conn) != CONNECTION_OK) {
		cb_pg_error(err, hb->conn, NULL, "heartbeat connection");
		cb__heartbeat_stop(hb);
		return CB_EDB;
	}
	{
		/* The owner's connection knows its server session (it took the
		 * lock): a pooler that hands this one the same session shares
		 * sessions between clients, and the lock's owner session means
		 * nothing. Refused here, before any step runs. */
		const char *start;
		int pid, rc = cb__conn_session(&pid, &start, hb->conn, err);

		if (rc < 0) {
			cb_error_prefix(err, "heartbeat connection");
			cb__heartbeat_stop(hb);
			return rc;
		}
	}
	if (pthread_create(&hb->thread, NULL, beat, hb) != 0) {
		cb__heartbeat_stop(hb);
		return cb_error_set(err, CB_ERROR, "cannot start the heartbeat thread");
	}
	hb->started = 1;
	*out = hb;
	return 0;
}

int cb__heartbeat_lost(cb__heartbeat *hb, char *why, size_t size)
{
	if (!hb || !atomic_load(&hb->lost))
		return 0;
	if (why) {
		pthread_mutex_lock(&hb->mu);
		snprintf(why, size, "%s", hb->why);
		pthread_mutex_unlock(&hb->mu);
	}
	return 1;
}

double cb__heartbeat_renewed(cb__heartbeat *hb)
{
	double t;

	pthread_mutex_lock(&hb->mu);
	t = hb->renewed;
	pthread_mutex_unlock(&hb->mu);
	return t;
}

void cb__heartbeat_stop(cb__heartbeat *hb)
{
	if (!hb)
		return;
	pthread_mutex_lock(&hb->mu);
	hb->stop = 1;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	if (hb->started)
		pthread_join(hb->thread, NULL);
	cb__pg_release(hb->conn);
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
	free(hb->lock_name);
	free(hb->owner_id);
	free(hb);
}
