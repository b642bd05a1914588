/*
 * libFuzzer target: schedule parameter templates, and cron expressions in a
 * zone with daylight saving time. The input is used twice: as a template
 * filled for a fire instant (what is filled must be shorter than the limit,
 * and a template without braces must come back unchanged), and as a cron
 * expression whose chain of next instants in a zone with a spring-forward
 * and a fall-back change must strictly increase.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "template.h"
#include "zone.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A made-up zone: +1h, then +2h from T1, then +1h again from T2. */
#define T1 1774746000LL
#define T2 1792890000LL

static int lookup(void *ctx, long long t, cb__zone_segment *out, cb_error *err)
{
	(void)ctx, (void)err;
	if (t < T1)
		*out = (cb__zone_segment){ -(1LL << 40), T1, 3600, 3600, 7200 };
	else if (t < T2)
		*out = (cb__zone_segment){ T1, T2, 7200, 3600, 3600 };
	else
		*out = (cb__zone_segment){ T2, 1LL << 40, 3600, 7200, 3600 };
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *filled = NULL;
	cb__fire_vars v = { 1790000000LL, { 2026, 9, 21, 16, 13, 20 }, 7200, "fuzz" };
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cb__template_fill(&filled, text, &v, &err) == 0) {
		if (strlen(filled) >= CB__TEMPLATE_MAX)
			abort();
		if (!strchr(text, '{') && !strchr(text, '}') && strcmp(filled, text) != 0)
			abort();
		free(filled);
	}
	if (cb_cron_parse(&c, text, &err) == 0) {
		long long t = T1 - 3 * 86400, next;

		for (int i = 0; i < 16; i++) {
			cb_error e = CB_ERROR_INIT;
			int rc = cb__cron_next_instant(&next, c, t, lookup, NULL, &e);

			if (rc == CB_ENOTFOUND)
				break;
			if (rc < 0 || next <= t)
				abort();
			t = next;
		}
		cb_cron_free(c);
	}
	free(text);
	return 0;
}
