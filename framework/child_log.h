/*
 * What a scheduler node's child prints (internal): its stdout and stderr are
 * pipes that the node's own loop drains (non-blocking reads, and the pipes
 * among what its waits poll), each read passed on to the node's stdout or
 * stderr, as when the child wrote there itself, and kept in a tail
 * (core/tail.h) that the loop stores as the run's log
 * (repository/run_log.c).
 *
 * No thread: a child's parent-death signal (PR_SET_PDEATHSIG, its stop when
 * the node dies) is sent again each time the child passes to another thread
 * of the dying node, and a second SIGTERM is fatal to a run (signals.c).
 */
#ifndef CB_FRAMEWORK_CHILD_LOG_H
#define CB_FRAMEWORK_CHILD_LOG_H

#include <poll.h>
#include <stddef.h>

typedef struct cb__child_log cb__child_log;

/* Read @p out_fd and @p err_fd (stolen: made non-blocking, closed at their
 * end or by cb__child_log_free, also on failure) keeping @p cap bytes (0:
 * the default). @return 0 or CB_ENOMEM. */
int cb__child_log_new(cb__child_log **out, int out_fd, int err_fd, size_t cap);

/* Read what is there now, without waiting; pass it on and keep its tail. */
void cb__child_log_drain(cb__child_log *l);

/* Add its open pipes to @p p (room for 2), for a poll. @return how many. */
size_t cb__child_log_pollfds(const cb__child_log *l, struct pollfd *p);

/* Both pipes at their end: everything the child printed was read. */
int cb__child_log_done(const cb__child_log *l);

/* The tail as new valid UTF-8 text if it grew since the last call or
 * @p always, else NULL (also out of memory); @p dropped, @p total as
 * cb__tail's. */
char *cb__child_log_take(cb__child_log *l, int always, long long *dropped, long long *total);

/* The last line that says something, into @p out ("" if none). */
void cb__child_log_last_line(const cb__child_log *l, char *out, size_t size);

/* Close the pipes, free. NULL is fine. */
void cb__child_log_free(cb__child_log *l);

#endif
