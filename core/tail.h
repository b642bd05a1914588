/*
 * The tail of a process's output (internal): the last bytes it printed, up to
 * a cap, and how many were cut from the head to keep it there. What a
 * scheduler node or the console keeps of a run they launched, to be stored as
 * the run's log (repository/run_log.c). Not thread-safe: its owner locks.
 */
#ifndef CB_CORE_TAIL_H
#define CB_CORE_TAIL_H

#include <stddef.h>

#define CB__TAIL_CAP_DEFAULT (64 * 1024)

typedef struct cb__tail {
	char *buf;          /* a ring of cap bytes */
	size_t cap;         /* 0: the allocation failed, nothing is kept */
	size_t start, used; /* the oldest byte kept, how many are kept */
	long long total;    /* bytes appended since init */
	int dirty;          /* appended to since the last cb__tail_text */
} cb__tail;

/* Keep at most @p cap bytes (CB__TAIL_CAP_DEFAULT when 0). Out of memory, the
 * tail keeps nothing but still counts. */
void cb__tail_init(cb__tail *t, size_t cap);

/* Append @p n bytes of @p data, dropping the oldest past the cap. */
void cb__tail_append(cb__tail *t, const char *data, size_t n);

/* Bytes cut from the head so far. */
long long cb__tail_dropped(const cb__tail *t);

/*
 * What is kept, as a new NUL-terminated string of valid UTF-8 (invalid
 * bytes and NUL each become U+FFFD); clears dirty. NULL when out of memory.
 */
char *cb__tail_text(cb__tail *t);

/*
 * The last line that says something (not blank), without its newline, into
 * @p out (cut to fit @p size, as valid UTF-8); "" when there is none.
 */
void cb__tail_last_line(char *out, size_t size, const cb__tail *t);

void cb__tail_free(cb__tail *t);

#endif
