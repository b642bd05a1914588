/*
 * The daemons' log lines (internal): one event per line on stderr, as the
 * text people have always read ("scheduler: ledger 07:00:00: fired ..."), or,
 * with --log-format json (or CBATCH_LOG_FORMAT=json), as one JSON object per
 * line for a log shipper: time with its zone, level, an event name from the
 * fixed vocabulary below, the fields that apply, pid and the message. The
 * message is always one line of cbatch's own words (never a raw libpq line:
 * callers pass cb__pg_message_line's).
 */
#ifndef CB_CORE_LOG_H
#define CB_CORE_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum cb__log_format {
	CB__LOG_TEXT = 0,
	CB__LOG_JSON = 1
};

/* "text" or "json" into @p out. @return 0, or -1 for anything else. */
int cb__log_format_parse(int *out, const char *name);
/* The process's format: set by --log-format; until then
 * CBATCH_LOG_FORMAT's ("text" unless it says "json"). Setting it also sets
 * CBATCH_LOG_FORMAT, so that the processes a daemon starts log alike. */
void cb__log_set_format(int format);
int cb__log_get_format(void);

/* The events, a fixed vocabulary (docs/logs.md); a line names one. */
#define CB__LOG_EVENTS(X)                                                                          \
	X(NODE_STARTED, "node.started")                                                            \
	X(NODE_STOPPING, "node.stopping")                                                          \
	X(NODE_STOPPED, "node.stopped")                                                            \
	X(REPOSITORY_LOST, "repository.lost")                                                      \
	X(REPOSITORY_BACK, "repository.back")                                                      \
	X(SCHEDULE_UNUSABLE, "schedule.unusable")                                                  \
	X(FIRING_FIRED, "firing.fired")                                                            \
	X(FIRING_RESTARTED, "firing.restarted")                                                    \
	X(FIRING_CLAIMED_ELSEWHERE, "firing.claimed_elsewhere")                                    \
	X(FIRING_SKIPPED, "firing.skipped")                                                        \
	X(FIRING_QUEUED, "firing.queued")                                                          \
	X(FIRING_MISFIRED, "firing.misfired")                                                      \
	X(FIRING_LEFT, "firing.left_to_others")                                                    \
	X(FIRING_ENDED, "firing.ended")                                                            \
	X(FIRING_NOT_LAUNCHED, "firing.not_launched")                                              \
	X(FIRING_RECOVERY, "firing.recovery")                                                      \
	X(FIRING_NOTE, "firing.note")                                                              \
	X(PARTITION_CLAIMED, "partition.claimed")                                                  \
	X(PARTITION_ENDED, "partition.ended")                                                      \
	X(PARTITION_GAVE_UP, "partition.gave_up")                                                  \
	X(PARTITION_WAITING, "partition.waiting")                                                  \
	X(WORKER_RETRY, "worker.retry")                                                            \
	X(STEP_OUTAGE_RIDDEN, "step.outage_ridden")                                                \
	X(STEP_OUTAGE_BEYOND, "step.outage_beyond_budget")                                         \
	X(STEP_OVERLAP_FALLBACK, "step.overlap_fallback")                                          \
	X(SERVE_LISTENING, "serve.listening")                                                      \
	X(SERVE_ACTION, "serve.action")                                                            \
	X(SERVE_CHILD_OUTPUT, "serve.child_output")                                                \
	X(SERVE_CHILD_EXITED, "serve.child_exited")                                                \
	X(SERVE_STOPPING, "serve.stopping")                                                        \
	X(SERVE_STOPPED, "serve.stopped")                                                          \
	X(SERVE_NOTE, "serve.note")                                                                \
	X(JOB_ENDED, "job.ended")                                                                  \
	X(JOB_FAILED, "job.failed")                                                                \
	X(COMMAND_FAILED, "command.failed")

#define CB__LOG_EVENT_ID(id, name) CB__EV_##id,
enum cb__log_event {
	CB__LOG_EVENTS(CB__LOG_EVENT_ID) CB__NLOG_EVENTS
};
#undef CB__LOG_EVENT_ID

/* The name of event @p ev ("firing.fired"), or NULL. */
const char *cb__log_event_name(int ev);

enum cb__log_level {
	CB__LOG_DEBUG,
	CB__LOG_INFO,
	CB__LOG_WARN,
	CB__LOG_ERROR
};

/* What a line is about: NULL strings and ids of 0 are absent (so that a
 * compound literal names only what applies), a partition and an exit code
 * only with their has_ flag. */
typedef struct cb__log_fields {
	const char *job;
	long long execution;
	const char *step;
	int partition, has_partition;
	const char *schedule;
	long long firing;
	const char *instant;          /* a firing's instant as the schedule shows it */
	const char *node;             /* a scheduler node's or a worker's name */
	const char *code;             /* an error's code (cb_strcode) */
	int exit_code, has_exit_code; /* a process's exit code */
} cb__log_fields;

/* The fields as an argument: CB__LOG_WITH(.job = name, .execution = id). */
#define CB__LOG_WITH(...) (&(const cb__log_fields){ __VA_ARGS__ })

/*
 * Print one line to stderr: in text, "@p source: MESSAGE" (the line people
 * read today); in JSON, the event with @p level, @p f's fields, "source",
 * "pid" and the message (newlines and control characters escaped away).
 * @p f may be NULL.
 */
void cb__log(const char *source, int level, int event, const cb__log_fields *f, const char *fmt,
	     ...) __attribute__((format(printf, 5, 6)));
void cb__vlog(const char *source, int level, int event, const cb__log_fields *f, const char *fmt,
	      va_list ap);
/* The same to @p out (serve's log is its standard output). */
void cb__log_to(FILE *out, const char *source, int level, int event, const cb__log_fields *f,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void cb__vlog_to(FILE *out, const char *source, int level, int event, const cb__log_fields *f,
		 const char *fmt, va_list ap);

#endif
