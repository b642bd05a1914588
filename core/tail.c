/* The tail of a process's output (tail.h): a ring of the last bytes. */
#include "tail.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

void cb__tail_init(cb__tail *t, size_t cap)
{
	memset(t, 0, sizeof(*t));
	if (cap == 0)
		cap = CB__TAIL_CAP_DEFAULT;
	if ((t->buf = malloc(cap)) != NULL)
		t->cap = cap;
}

void cb__tail_append(cb__tail *t, const char *data, size_t n)
{
	t->total += (long long)n;
	if (n > 0)
		t->dirty = 1;
	if (t->cap == 0)
		return;
	if (n >= t->cap) {
		/* Only its end can stay. */
		data += n - t->cap;
		n = t->cap;
		t->start = 0;
		t->used = 0;
	}
	for (size_t i = 0; i < n;) {
		size_t at = (t->start + t->used) % t->cap, run = t->cap - at;

		if (run > n - i)
			run = n - i;
		memcpy(t->buf + at, data + i, run);
		i += run;
		t->used += run;
		if (t->used > t->cap) {
			/* The oldest bytes were overwritten. */
			t->start = (t->start + t->used - t->cap) % t->cap;
			t->used = t->cap;
		}
	}
}

long long cb__tail_dropped(const cb__tail *t)
{
	return t->total - (long long)t->used;
}

/* The kept bytes in order, NUL-terminated, NULs made invalid bytes (0xFF) so
 * that sanitizing replaces them too. */
static char *linear(const cb__tail *t)
{
	char *raw = malloc(t->used + 1);

	if (!raw)
		return NULL;
	for (size_t i = 0; i < t->used; i++) {
		char c = t->buf[(t->start + i) % t->cap];

		raw[i] = c ? c : (char)0xFF;
	}
	raw[t->used] = '\0';
	return raw;
}

char *cb__tail_text(cb__tail *t)
{
	char *raw = linear(t), *out;
	size_t size;

	if (!raw)
		return NULL;
	/* U+FFFD is 3 bytes for each invalid byte at worst. */
	size = t->used * 3 + 1;
	if ((out = malloc(size)) != NULL) {
		cb__utf8_sanitize(out, size, raw);
		t->dirty = 0;
	}
	free(raw);
	return out;
}

void cb__tail_last_line(char *out, size_t size, const cb__tail *t)
{
	char *raw = linear(t), *end, *line;

	out[0] = '\0';
	if (!raw)
		return;
	end = raw + strlen(raw);
	for (;;) {
		while (end > raw && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
			end--;
		line = end;
		while (line > raw && line[-1] != '\n')
			line--;
		if (line == end || end == raw)
			break;
		*end = '\0';
		cb__utf8_sanitize(out, size, line);
		break;
	}
	free(raw);
}

void cb__tail_free(cb__tail *t)
{
	if (!t)
		return;
	free(t->buf);
	memset(t, 0, sizeof(*t));
}
