/* A bump allocator reset per chunk: blocks are kept and reused. */
#ifndef CB_FRAMEWORK_ARENA_H
#define CB_FRAMEWORK_ARENA_H

#include <stddef.h>

typedef struct cb_arena_block cb_arena_block;

typedef struct cb_arena {
	cb_arena_block *head;  /* block being filled */
	cb_arena_block *spare; /* blocks kept from earlier chunks */
} cb_arena;

void cb__arena_init(cb_arena *a);
void *cb__arena_alloc(cb_arena *a, size_t size);
void cb__arena_reset(cb_arena *a);
void cb__arena_free(cb_arena *a);

#endif
