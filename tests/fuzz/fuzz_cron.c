/*
 * libFuzzer target: the cron parser and the next-time search. The input is
 * the expression; whatever parses is asked for a chain of next times from a
 * few starting points (the leap day, the last second of a year, the last
 * year), each of which must come strictly after the one before and be a
 * valid civil time, found within bounded work.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int later(const cb_civil *a, const cb_civil *b)
{
	const int x[6] = { a->year, a->month, a->day, a->hour, a->minute, a->second };
	const int y[6] = { b->year, b->month, b->day, b->hour, b->minute, b->second };

	for (int i = 0; i < 6; i++)
		if (x[i] != y[i])
			return x[i] > y[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const cb_civil starts[] = { { 2024, 2, 29, 12, 0, 0 },
					   { 2025, 12, 31, 23, 59, 59 },
					   { 2099, 3, 1, 0, 0, 0 },
					   { 9999, 12, 1, 0, 0, 0 } };
	char *expr = malloc(size + 1);
	cb_cron *c = NULL;
	cb_error err = CB_ERROR_INIT;

	if (!expr)
		return 0;
	memcpy(expr, data, size);
	expr[size] = '\0';
	if (cb_cron_parse(&c, expr, &err) == 0) {
		for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
			cb_civil at = starts[s], next;

			for (int i = 0; i < 8; i++) {
				cb_error e = CB_ERROR_INIT;
				int rc = cb_cron_next(c, &at, &next, &e);

				if (rc == CB_ENOTFOUND)
					break;
				/* Only a bad start could be refused, and none of these is. */
				if (rc != 0 || !later(&next, &at))
					abort();
				if (!cb_cron_has_seconds(c) && next.second != 0)
					abort();
				at = next;
			}
		}
		cb_cron_free(c);
	} else if (err.code == 0 || err.message[0] == '\0') {
		abort(); /* a refusal always says why */
	}
	free(expr);
	return 0;
}
