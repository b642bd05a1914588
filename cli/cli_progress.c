/* The live progress line on a terminal: job/step, counts, rate, elapsed. */
#include "cli_internal.h"
#include "clock.h"

#include <string.h>

/* At most this many seconds between two lines: ~4 updates per second. */
#define PROGRESS_INTERVAL 0.25

void cb__cli_progress_init(cb__cli_progress *p, FILE *f, const char *job)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->job = job;
	p->last = -1;
}

/* "1234", "12.3k", "4.56M": rates fit in a short field. */
static void fmt_rate(char *buf, size_t size, double r)
{
	if (r < 10000)
		snprintf(buf, size, "%.0f", r);
	else if (r < 10e6)
		snprintf(buf, size, "%.1fk", r / 1e3);
	else
		snprintf(buf, size, "%.2fM", r / 1e6);
}

void cb__cli_progress_update(void *ctx, const char *step_name, long long read_count,
			     long long write_count, double elapsed_seconds)
{
	cb__cli_progress *p = ctx;
	const char *step = step_name ? step_name : "";
	double now = cb__clock_mono();
	int new_step = strncmp(p->step, step, sizeof(p->step) - 1) != 0;
	char rate[32], job[512], shown[512];

	/* A new step always shows; otherwise at most one line per interval. */
	if (!new_step && p->last >= 0 && now - p->last < PROGRESS_INTERVAL)
		return;
	snprintf(p->step, sizeof(p->step), "%s", step);
	p->last = now;
	fmt_rate(rate, sizeof(rate),
		 elapsed_seconds > 0 ? (double)read_count / elapsed_seconds : 0.0);
	/* \r returns to the start of the line, ESC[K erases what a longer line left. */
	fprintf(p->f, "\r%s/%s: %lld read, %lld written, %s/s, %.1fs\033[K",
		cb__cli_term(job, sizeof(job), p->job), cb__cli_term(shown, sizeof(shown), step),
		read_count, write_count, rate, elapsed_seconds);
	fflush(p->f);
	p->shown = 1;
}

void cb__cli_progress_clear(cb__cli_progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->shown = 0;
}
