/*
 * Snapshots: what many clients poll (/metrics, the jobs overview) is computed
 * once at a time and reused for an interval, so that a hundred scrapers
 * cost the database what one does. A request that finds the snapshot stale
 * starts a computation unless one is under way (single flight), and waits
 * for it; only the computation holds a pooled connection, so the waiters
 * never starve the pool.
 */
#include "console.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* How long after a computation started the requests that have a text to
 * fall back on wait for it: enough for one in the normal course
 * (milliseconds), and far short of the server's 10 s request-head deadline,
 * which a thread held longer would make it miss for the other connections
 * it serves. */
#define STALE_WAIT 1.0
/* How long a request with nothing to fall back on (the first) waits: longer
 * than the pool's statement timeout lets a query run. */
#define FLIGHT_WAIT_MAX 120.0

struct cb__snapshot {
	pthread_mutex_t mu;
	pthread_cond_t done;
	double interval;         /* seconds a computed text is reused */
	cb__pool *pool;          /* where the computation borrows its connection */
	cb__snapshot_compute fn; /* what computes it, with ctx */
	void *ctx;
	char *text; /* the last text computed, or NULL */
	size_t len;
	double at;              /* cb__clock_mono() when it was computed */
	double took;            /* seconds its computation took */
	unsigned long computed; /* successful computations */
	int stale;              /* the text predates an invalidation */
	unsigned long epoch;    /* invalidations */
	/* The computation: on a thread of its own, so that no request thread
	 * waits longer than it chooses to. */
	pthread_t worker;
	int joinable;
	int computing;
	unsigned long gen;         /* computations started */
	unsigned long start_epoch; /* the epoch when the last one started */
	double started;            /* cb__clock_mono() then */
	/* The outcome of computation number ended_gen, for its waiters. */
	unsigned long ended_gen;
	int ended_rc;
	cb_error ended_err;
};

int cb__snapshot_new(cb__snapshot **out, double interval, cb__pool *pool, cb__snapshot_compute fn,
		     void *ctx, cb_error *err)
{
	cb__snapshot *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	pthread_mutex_init(&s->mu, NULL);
	cb__clock_cond_init(&s->done);
	s->interval = interval;
	s->pool = pool;
	s->fn = fn;
	s->ctx = ctx;
	*out = s;
	return 0;
}

void cb__snapshot_invalidate(cb__snapshot *s)
{
	pthread_mutex_lock(&s->mu);
	s->epoch++;
	s->stale = 1;
	pthread_mutex_unlock(&s->mu);
}

void cb__snapshot_free(cb__snapshot *s)
{
	if (!s)
		return;
	if (s->joinable)
		pthread_join(s->worker, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->done);
	free(s->text);
	free(s);
}

/* A copy of the current text with its age and cost; @p s->mu held. */
static int copy_out(cb__snapshot *s, cb__snapshot_view *v, cb_error *err)
{
	v->text = malloc(s->len + 1);
	if (!v->text)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	memcpy(v->text, s->text, s->len + 1);
	v->len = s->len;
	v->age = cb__clock_mono() - s->at;
	if (v->age < 0)
		v->age = 0;
	v->took = s->took;
	v->computed = s->computed;
	return 0;
}

static void *work(void *arg)
{
	cb__snapshot *s = arg;
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	char *text = NULL;
	size_t len = 0;
	double t0 = cb__clock_mono();
	int rc = cb__pool_get(s->pool, &conn, &err);

	if (rc == 0) {
		rc = s->fn(&text, &len, conn, s->ctx, &err);
		cb__pool_put(s->pool, conn);
	}
	pthread_mutex_lock(&s->mu);
	if (rc == 0) {
		free(s->text);
		s->text = text;
		s->len = len;
		s->at = cb__clock_mono();
		s->took = s->at - t0;
		s->computed++;
		/* Its waiters take it; the requests after them compute again. */
		s->stale = s->epoch != s->start_epoch;
	} else {
		free(text);
	}
	s->computing = 0;
	s->ended_gen = s->gen;
	s->ended_rc = rc;
	s->ended_err = err;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Start a computation; @p s->mu held. */
static int start(cb__snapshot *s, cb_error *err)
{
	int e;

	/* The last one has ended (computing is 0): its thread is leaving. */
	if (s->joinable)
		pthread_join(s->worker, NULL);
	s->joinable = 0;
	s->computing = 1;
	s->gen++;
	s->start_epoch = s->epoch;
	s->started = cb__clock_mono();
	if ((e = pthread_create(&s->worker, NULL, work, s)) != 0) {
		s->computing = 0;
		return cb_error_set(err, CB_ERROR, "cannot start a thread: %s", strerror(e));
	}
	s->joinable = 1;
	return 0;
}

int cb__snapshot_get(cb__snapshot *s, cb__snapshot_view *v, cb_error *err)
{
	double deadline = cb__clock_mono() + FLIGHT_WAIT_MAX;
	int rc;

	memset(v, 0, sizeof(*v));
	pthread_mutex_lock(&s->mu);
	for (;;) {
		int usable = s->text && !s->stale;
		unsigned long joined;
		double until;

		if (usable && cb__clock_mono() - s->at < s->interval) {
			rc = copy_out(s, v, err);
			break;
		}
		if (!s->computing && (rc = start(s, err)) < 0)
			break;
		/* Wait for the computation under way (ours or another request's):
		 * when the last text can be served instead (its age says how old),
		 * until a second after it started — not a second more per request,
		 * which the requests queued behind one thread would add up — else
		 * to its end. */
		joined = s->gen;
		until = usable ? s->started + STALE_WAIT : deadline;
		rc = 0;
		while (s->computing && s->gen == joined && rc != ETIMEDOUT)
			rc = cb__clock_cond_wait(&s->done, &s->mu, until);
		if (s->computing && s->gen == joined) {
			rc = usable ? copy_out(s, v, err) :
				      cb_error_set(err, CB_ERETRY,
						   "the snapshot being computed did not come "
						   "within %.0f s",
						   FLIGHT_WAIT_MAX);
			break;
		}
		if (s->ended_rc < 0) {
			*err = s->ended_err;
			rc = s->ended_rc;
			break;
		}
		if (!s->stale) {
			rc = copy_out(s, v, err);
			break;
		}
		/* It began before an action changed what it shows: again. */
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}
