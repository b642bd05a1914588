/* Schedules' internals shared by the scheduler daemon (scheduler.c) and the
 * schedule calls of schedule.h (schedule_admin.c). */
#ifndef CB_FRAMEWORK_SCHEDULER_H
#define CB_FRAMEWORK_SCHEDULER_H

#include "cbatch/cli.h"
#include "cbatch/schedule.h"
#include "cbatch/cron.h"
#include "cbatch/error.h"

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

/* Instant @p t filled into @p tmpl ("{fire_time}", "{fire_utc}") in zone
 * @p z, into @p buf; "@t" when the zone cannot be read. */
struct cb__pg_zone;
void cb__schedule_fmt(char *buf, size_t size, struct cb__pg_zone *z, long long t, const char *tmpl);
