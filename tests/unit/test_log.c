/*
 * The daemons' log lines (core/log.h), with no database: text as people have
 * always read it, JSON as a log shipper wants it (one object per line, the
 * documented fields, one line however many newlines a message has), and the
 * event vocabulary docs/logs.md documents being exactly the code's.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cbtest.h"
#include "log.h"

/* One line logged to a temporary file, read back (NUL-terminated). */
static char *logged(int format, int level, int event, const cb__log_fields *f, const char *msg)
{
	FILE *tmp = tmpfile();
	static char buf[16384];
	size_t n;

	cb__log_set_format(format);
	cb__log_to(tmp, "scheduler", level, event, f, "%s", msg);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	cb__log_set_format(CB__LOG_TEXT);
	return buf;
}

static void test_text_is_the_line_people_read(void)
{
	CBT_EQ_STR(logged(CB__LOG_TEXT, CB__LOG_INFO, CB__EV_FIRING_FIRED, NULL,
			  "tick 07:00:00: fired"),
		   "scheduler: tick 07:00:00: fired\n");
}

static void test_json_has_the_fields_that_apply(void)
{
	char *line = logged(CB__LOG_JSON, CB__LOG_WARN, CB__EV_FIRING_ENDED,
			    CB__LOG_WITH(.job = "tick", .execution = 42, .schedule = "every",
					 .firing = 7, .instant = "2026-12-03 07:00:00+01:00",
					 .node = "n1", .exit_code = 0, .has_exit_code = 1,
					 .code = "CB_EDB"),
			    "a message\nwith a newline\tand a tab");
	json_error_t e;
	json_t *o;
	regex_t iso;

	CBT_EQ_LL(strchr(line, '\n') == line + strlen(line) - 1, 1); /* one line */
	o = json_loads(line, 0, &e);
	if (!o) {
		CBT_FAILF("not JSON (%s): %s", e.text, line);
		return;
	}
	CBT_EQ_STR(json_string_value(json_object_get(o, "level")), "warn");
	CBT_EQ_STR(json_string_value(json_object_get(o, "event")), "firing.ended");
	CBT_EQ_STR(json_string_value(json_object_get(o, "source")), "scheduler");
	CBT_EQ_STR(json_string_value(json_object_get(o, "job")), "tick");
	CBT_EQ_LL(json_integer_value(json_object_get(o, "execution")), 42);
	CBT_EQ_STR(json_string_value(json_object_get(o, "schedule")), "every");
	CBT_EQ_LL(json_integer_value(json_object_get(o, "firing")), 7);
	CBT_EQ_STR(json_string_value(json_object_get(o, "node")), "n1");
	CBT_EQ_STR(json_string_value(json_object_get(o, "code")), "CB_EDB");
	CU_ASSERT(json_is_integer(json_object_get(o, "exit_code")));
	CBT_EQ_LL(json_integer_value(json_object_get(o, "exit_code")), 0);
	CU_ASSERT(json_integer_value(json_object_get(o, "pid")) > 0);
	CBT_EQ_STR(json_string_value(json_object_get(o, "message")),
		   "a message with a newline and a tab");
	CU_ASSERT(!json_object_get(o, "step"));
	CU_ASSERT(!json_object_get(o, "partition"));
	regcomp(&iso,
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}[+-][0-9]{2}:[0-9]{2}$",
		REG_EXTENDED | REG_NOSUB);
	CBT_EQ_LL(regexec(&iso, json_string_value(json_object_get(o, "time")), 0, NULL, 0), 0);
	regfree(&iso);
	json_decref(o);
}

/* A long message (a firing's parameters) is logged whole, in both formats. */
static void test_a_long_message_is_whole(void)
{
	static char msg[6001];
	char *line;

	memset(msg, 'x', sizeof(msg) - 1);
	msg[sizeof(msg) - 2] = 'Z';
	line = logged(CB__LOG_TEXT, CB__LOG_INFO, CB__EV_FIRING_FIRED, NULL, msg);
	CBT_EQ_LL((long long)strlen(line), (long long)(strlen("scheduler: ") + 6000 + 1));
	line = logged(CB__LOG_JSON, CB__LOG_INFO, CB__EV_FIRING_FIRED, NULL, msg);
	CU_ASSERT(strstr(line, "xxZ\"") != NULL);
}

static void test_formats_parse(void)
{
	int f = -1;

	CBT_EQ_LL(cb__log_format_parse(&f, "json"), 0);
	CBT_EQ_LL(f, CB__LOG_JSON);
	CBT_EQ_LL(cb__log_format_parse(&f, "text"), 0);
	CBT_EQ_LL(f, CB__LOG_TEXT);
	CBT_EQ_LL(cb__log_format_parse(&f, "JSON"), -1);
	CBT_EQ_LL(cb__log_format_parse(&f, ""), -1);
	CBT_EQ_LL(cb__log_format_parse(&f, NULL), -1);
	/* Setting it is passed on to the processes a daemon starts. */
	cb__log_set_format(CB__LOG_JSON);
	CBT_EQ_STR(getenv("CBATCH_LOG_FORMAT"), "json");
	cb__log_set_format(CB__LOG_TEXT);
	CBT_EQ_STR(getenv("CBATCH_LOG_FORMAT"), "text");
}

/* The log event table of docs/logs.md names exactly the code's events. */
static void test_readme_documents_every_event(void)
{
	char path[4096], *text, *table, *end;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/docs/logs.md", getenv("CBATCH_TEST_SOURCE_DIR"));
	f = fopen(path, "r");
	if (!f) {
		CBT_FAILF("cannot read %s", path);
		return;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		CBT_FAILF("short read of %s", path);
	fclose(f);
	table = strstr(text, "| event | level | when |");
	if (!table) {
		CBT_FAILF("docs/logs.md has no log event table");
		free(text);
		return;
	}
	end = strstr(table, "\n\n");
	if (end)
		*end = '\0';
	for (int ev = 0; ev < CB__NLOG_EVENTS; ev++) {
		char cell[128];

		snprintf(cell, sizeof(cell), "| `%s` |", cb__log_event_name(ev));
		if (!strstr(table, cell))
			CBT_FAILF("docs/logs.md's log event table lacks %s",
				  cb__log_event_name(ev));
	}
	/* ... and no other: each row's first cell is an event of the code. */
	for (char *p = strstr(table, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
		char name[128];
		int known = 0;

		if (sscanf(p, "\n| `%127[^`]`", name) != 1)
			continue;
		for (int ev = 0; ev < CB__NLOG_EVENTS; ev++)
			known |= strcmp(name, cb__log_event_name(ev)) == 0;
		if (!known)
			CBT_FAILF("docs/logs.md documents an event the code has not: %s", name);
	}
	free(text);
}

static const CU_TestInfo tests[] = {
	{ "text is the line people read", test_text_is_the_line_people_read },
	{ "json has the fields that apply", test_json_has_the_fields_that_apply },
	{ "a long message is whole", test_a_long_message_is_whole },
	{ "formats parse, and are passed on", test_formats_parse },
	{ "the README documents every event", test_readme_documents_every_event },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("log", NULL, NULL, tests);
}
