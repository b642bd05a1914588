/* The status vocabulary, generated from sql/statuses.txt (statuses.c). Internal. */
#ifndef CB_STATUSES_H
#define CB_STATUSES_H
#include <stddef.h>

struct cb__status_word {
	const char *name; /* as stored in the status columns */
	int live;         /* may still run: at most one live execution per instance */
	int restartable;  /* a restart may follow it */
};

/* Indexed by cb_status. */
extern const struct cb__status_word cb__statuses[];
extern const size_t cb__statuses_count;

#endif
