/* The scheduler daemon (`scheduler`): fires due schedules, each fire instant
 * once per cluster, by launching the job in a child process of the same
 * program. Internal; the CLI's cmd_scheduler.c drives it. */
#ifndef CB_FRAMEWORK_SCHEDULER_H
#define CB_FRAMEWORK_SCHEDULER_H

#include "cbatch/cli.h"
#include "cbatch/cron.h"
#include "cbatch/error.h"

typedef struct cb__scheduler_options {
	const char *conninfo; /* NULL: $CBATCH_DB, else libpq's PG* variables */
	const char *exe;      /* the program the children run (this one) */
	const char *prog;     /* their argv[0] */
	double lease_seconds; /* how long the other nodes trust this one's heartbeat */
	int max_running;      /* children at once; above it, instants are left to others */
	int verbose;          /* 0 quiet, 1 a line per firing, 2 also skipped instants */
	double exit_after;    /* stop after this many seconds (0: at a signal only) */
} cb__scheduler_options;

#define CB__SCHEDULER_OPTIONS_INIT                                                                 \
	{                                                                                          \
		NULL, NULL, NULL, 30.0, 8, 1, 0.0                                                  \
	}

/* What a node did, for the summary line. */
typedef struct cb__scheduler_result {
	long long fired, skipped, misfired, failed_to_launch, orphans_reported;
} cb__scheduler_result;

/* Run until SIGINT/SIGTERM (or exit_after): then no new firing is taken,
 * running children are asked to stop after their chunk (SIGTERM) and are
 * waited for. A lost repository connection is retried with backoff; no
 * instant is fired without a committed claim.
 * @return 0, or a CB_E* code with @p err set (bad options). */
int cb__scheduler_run(cb__scheduler_result *out, const cb_registry *reg,
		      const cb__scheduler_options *o, cb_error *err);

/* The next fire instant of a schedule strictly after @p after, in its zone,
 * with the zone rules read over @p conn. */
int cb__schedule_next(long long *out, PGconn *conn, const char *cron, const char *zone,
		      long long after, cb_error *err);

#endif

/* The zone-aware pieces shared by the daemon and the `schedule` commands. */
#include <jansson.h>
#include "cbatch/params.h"

/* Fill a schedule's parameter templates for fire instant @p t, whose civil
 * time in the schedule's zone is @p local at UTC offset @p offset. @p words
 * receives a NULL-terminated array of new strings (free with
 * cb__schedule_words_free), with the non-identifying schedule.name and
 * schedule.fireTime added unless the templates set them; @p params (may be
 * NULL) the same words parsed. @return 0, CB_EINVAL (the message names the
 * template), CB_ENOMEM. */
int cb__schedule_fill(char ***words, cb_params **params, const json_t *templates,
		      const char *schedule, long long t, const cb_civil *local, int offset,
		      cb_error *err);
void cb__schedule_words_free(char **words);
