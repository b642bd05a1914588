/* The step context handed to readers, writers and tasklets (internal layout). */
#ifndef CB_FRAMEWORK_STEP_CONTEXT_H
#define CB_FRAMEWORK_STEP_CONTEXT_H

#include "cbatch/item.h"
#include "cbatch/step.h"
#include "arena.h"

struct cb_step_context {
	const char *job_name;
	const char *step_name;
	long long job_instance_id;
	long long job_execution_id;
	long long step_execution_id;
	const cb_params *params;
	size_t chunk_size;
	PGconn *conn;
	json_t *job_context;     /* borrowed from the run */
	const json_t *partition; /* a partition's step: its partition object (borrowed) */
	long long version;       /* the step execution's committed version when it starts */
	char exit_status[32];    /* cb_step_context_set_exit_status */
	int checking;            /* a preflight's context (framework/preflight.c) */
	json_t *sources;         /* in a check: source column -> SQL type (owned by the check) */
};

struct cb_chunk {
	const cb_step_context *sc;
	cb_arena arena;
};

#endif
