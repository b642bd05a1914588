/*
 * What a scheduler node's child prints (internal): its stdout and stderr are
 * pipes read by a thread of their own, so that the child never blocks on a
 * full pipe whatever the node's loop is doing (a claim, an outage). Each read
 * is passed on to the node's own stdout or stderr, as when the child wrote
 * there itself, and kept in a tail (core/tail.h) that the node's loop stores
 * as the run's log (repository/run_log.c).
 */
#ifndef CB_FRAMEWORK_CHILD_LOG_H
#define CB_FRAMEWORK_CHILD_LOG_H

#include <stddef.h>

typedef struct cb__child_log cb__child_log;

/* Read @p out_fd and @p err_fd (stolen: closed at their end or by
 * cb__child_log_free, also on failure) keeping @p cap bytes. @return 0 or
 * CB_ENOMEM / CB_ERROR (no thread). */
int cb__child_log_start(cb__child_log **out, int out_fd, int err_fd, size_t cap);

/* Both pipes at their end: everything the child printed was read. */
int cb__child_log_done(cb__child_log *l);

/* The tail as new valid UTF-8 text if it grew since the last call or
 * @p always, else NULL (also out of memory); @p dropped, @p total as
 * cb__tail's. */
char *cb__child_log_take(cb__child_log *l, int always, long long *dropped, long long *total);

/* The last line that says something, into @p out ("" if none). */
void cb__child_log_last_line(cb__child_log *l, char *out, size_t size);

/* Stop reading (within a quarter of a second), close the pipes, free. NULL is
 * fine. */
void cb__child_log_free(cb__child_log *l);

#endif
