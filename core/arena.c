/* Per-chunk bump allocator: blocks are kept across chunks, so a steady job
 * stops allocating after its first chunk. */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#define BLOCK_MIN (64 * 1024)

struct cb_arena_block {
	cb_arena_block *next;
	size_t size;
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

void cb__arena_init(cb_arena *a)
{
	a->head = NULL;
	a->spare = NULL;
}

static size_t round_up(size_t n)
{
	size_t al = alignof(max_align_t);

	return (n + al - 1) / al * al;
}

void *cb__arena_alloc(cb_arena *a, size_t size)
{
	cb_arena_block *b = a->head;
	void *p;

	size = round_up(size ? size : 1);
	if (!b || b->size - b->used < size) {
		cb_arena_block **pp = &a->spare;

		/* Reuse a spare block big enough, else make one. */
		while (*pp && (*pp)->size < size)
			pp = &(*pp)->next;
		if (*pp) {
			b = *pp;
			*pp = b->next;
		} else {
			size_t bs = size > BLOCK_MIN ? size : BLOCK_MIN;

			if (bs > SIZE_MAX - sizeof(*b))
				return NULL;
			b = malloc(sizeof(*b) + bs);
			if (!b)
				return NULL;
			b->size = bs;
		}
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += size;
	return p;
}

void cb__arena_reset(cb_arena *a)
{
	while (a->head) {
		cb_arena_block *b = a->head;

		a->head = b->next;
		b->next = a->spare;
		a->spare = b;
	}
}

void cb__arena_free(cb_arena *a)
{
	cb_arena_block *lists[2] = { a->head, a->spare };

	for (int i = 0; i < 2; i++) {
		while (lists[i]) {
			cb_arena_block *b = lists[i];

			lists[i] = b->next;
			free(b);
		}
	}
	a->head = a->spare = NULL;
}
