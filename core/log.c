/* The daemons' log lines, as text or JSON (core/log.h). */
#include "log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"

/* -1: not decided yet (read CBATCH_LOG_FORMAT on first use). */
static atomic_int format = -1;

int cb__log_format_parse(int *out, const char *name)
{
	if (name && strcmp(name, "text") == 0)
		*out = CB__LOG_TEXT;
	else if (name && strcmp(name, "json") == 0)
		*out = CB__LOG_JSON;
	else
		return -1;
	return 0;
}

void cb__log_set_format(int f)
{
	atomic_store(&format, f);
	setenv("CBATCH_LOG_FORMAT", f == CB__LOG_JSON ? "json" : "text", 1);
}

int cb__log_get_format(void)
{
	int f = atomic_load(&format);

	if (f < 0) {
		if (cb__log_format_parse(&f, getenv("CBATCH_LOG_FORMAT")) < 0)
			f = CB__LOG_TEXT;
		atomic_store(&format, f);
	}
	return f;
}

#define CB__LOG_EVENT_NAME(id, name) name,
static const char *const event_names[] = { CB__LOG_EVENTS(CB__LOG_EVENT_NAME) };
#undef CB__LOG_EVENT_NAME

const char *cb__log_event_name(int ev)
{
	return ev >= 0 && ev < CB__NLOG_EVENTS ? event_names[ev] : NULL;
}

static const char *const level_names[] = { "debug", "info", "warn", "error" };

/* The wall clock in ISO 8601 with milliseconds and the local zone's offset. */
static void iso_now(char *buf, size_t size)
{
	double wall = cb__clock_wall();
	time_t secs = (time_t)wall;
	struct tm tm;
	char zone[8];
	size_t n;

	localtime_r(&secs, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm); /* +0100 -> +01:00 */
	snprintf(buf + n, size - n, ".%03d%.3s:%.2s", (int)((wall - (double)secs) * 1000.0) % 1000,
		 zone, zone + 3);
}

static void set_text(json_t *o, const char *key, const char *v)
{
	json_t *j = v ? json_string(v) : NULL; /* NULL too when not UTF-8 */

	if (j)
		json_object_set_new(o, key, j);
}

static void set_int(json_t *o, const char *key, long long v, int has)
{
	if (has)
		json_object_set_new(o, key, json_integer(v));
}

/* @p s with control characters (newlines among them) as spaces. */
static void one_line(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

void cb__vlog(const char *source, int level, int event, const cb__log_fields *f, const char *fmt,
	      va_list ap)
{
	cb__vlog_to(stderr, source, level, event, f, fmt, ap);
}

void cb__log_to(FILE *out, const char *source, int level, int event, const cb__log_fields *f,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cb__vlog_to(out, source, level, event, f, fmt, ap);
	va_end(ap);
}

void cb__vlog_to(FILE *out, const char *source, int level, int event, const cb__log_fields *f,
		 const char *fmt, va_list ap)
{
	char small[2048], *msg = small, when[48];
	json_t *o;
	char *line;
	va_list again;
	int n;

	/* Whole, however long (a firing's parameters): never cut short. */
	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n >= (int)sizeof(small) && (msg = malloc((size_t)n + 1)) != NULL)
		vsnprintf(msg, (size_t)n + 1, fmt, again);
	else if (!msg)
		msg = small;
	va_end(again);
	if (cb__log_get_format() == CB__LOG_TEXT) {
		fprintf(out, "%s: %s\n", source, msg);
		fflush(out);
		if (msg != small)
			free(msg);
		return;
	}
	one_line(msg);
	iso_now(when, sizeof(when));
	o = json_object();
	if (o) {
		json_object_set_new(o, "time", json_string(when));
		json_object_set_new(
			o, "level",
			json_string(level_names[level >= 0 && level <= CB__LOG_ERROR ? level : 1]));
		set_text(o, "event", cb__log_event_name(event));
		set_text(o, "source", source);
		if (f) {
			set_text(o, "job", f->job);
			set_int(o, "execution", f->execution, f->execution > 0);
			set_text(o, "step", f->step);
			set_int(o, "partition", f->partition, f->has_partition);
			set_text(o, "schedule", f->schedule);
			set_int(o, "firing", f->firing, f->firing > 0);
			set_text(o, "instant", f->instant);
			set_text(o, "node", f->node);
			set_text(o, "code", f->code);
			set_int(o, "exit_code", f->exit_code, f->has_exit_code);
		}
		set_int(o, "pid", (long long)getpid(), 1);
		set_text(o, "message", msg);
		if (!json_object_get(o, "message"))
			set_text(o, "message", "(a message that is not UTF-8)");
	}
	line = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(o);
	if (msg != small)
		free(msg);
	if (line) {
		/* One write: lines of processes sharing the stream stay whole. */
		size_t len = strlen(line);

		line[len] = '\n';
		fwrite(line, 1, len + 1, out);
		fflush(out);
		free(line);
	}
}

void cb__log(const char *source, int level, int event, const cb__log_fields *f, const char *fmt,
	     ...)
{
	va_list ap;

	va_start(ap, fmt);
	cb__vlog(source, level, event, f, fmt, ap);
	va_end(ap);
}
