/*
 * The throttle of the examples' chunked jobs: `-sleepMs:long=N` (not
 * identifying) makes each chunk wait N ms inside its transaction, before its
 * writes. Tests use it to make a run slow enough that a stop, a kill or a
 * takeover lands mid-run, instead of giving it a mountain of rows.
 */
#include <stdlib.h>
#include <time.h>

#include "examples.h"

/* A writer that only waits, first in the chunk. */
static int throttle_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	long long ms = *(long long *)state;
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	(void)tx, (void)items, (void)n, (void)err;
	nanosleep(&ts, NULL);
	return 0;
}

static void throttle_free(void *state)
{
	free(state);
}

int example_throttle_add(cb_chunk_parts *parts, const cb_step_context *sc, cb_error *err)
{
	long long sleep_ms = 0;
	long long *state;
	cb_writer w;

	cb_params_get_long(cb_step_context_params(sc), "sleepMs", &sleep_ms);
	if (sleep_ms <= 0)
		return 0;
	state = malloc(sizeof(*state));
	if (!state)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	*state = sleep_ms;
	w = (cb_writer){ .version = CB_WRITER_VERSION,
			 .state = state,
			 .write = throttle_write,
			 .free = throttle_free,
			 /* it sends nothing: fine on either connection */
			 .overlap_safe = 1 };
	/* The parts own the state from here, also when this fails. */
	return cb_chunk_parts_add_writer(parts, &w, err);
}
