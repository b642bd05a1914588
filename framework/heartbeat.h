/* The lease heartbeat: a thread with its own connection that extends the
 * execution lock while the job runs, and says when the lock is lost. */
#ifndef CB_FRAMEWORK_HEARTBEAT_H
#define CB_FRAMEWORK_HEARTBEAT_H

#include <libpq-fe.h>
#include "cbatch/error.h"

typedef struct cb__heartbeat cb__heartbeat;

/*
 * Start beating every lease/3 seconds on a new connection made with the
 * parameters of @p like (borrowed), reconnecting when it is lost. The lock
 * is given up as lost when the lease could not be extended for longer than
 * @p patience seconds (the lease, or the run's outage budget when longer: a
 * takeover meanwhile is seen by the token on reconnect). Strings are copied.
 */
int cb__heartbeat_start(cb__heartbeat **out, PGconn *like, const char *lock_name,
			const char *owner_id, long long token, double lease_seconds,
			double patience, long long job_execution_id, cb_error *err);

/* Non-zero once the lock is lost; @p why (may be NULL) receives the reason. */
int cb__heartbeat_lost(cb__heartbeat *hb, char *why, size_t size);

/* When the lease was last extended (cb__clock_mono() seconds; the start at first):
 * the lock is ours until about this plus the lease. */
double cb__heartbeat_renewed(cb__heartbeat *hb);

/* Stop the thread, close its connection, free. NULL-safe. */
void cb__heartbeat_stop(cb__heartbeat *hb);

#endif
