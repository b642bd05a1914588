/* The WHERE condition of a partition (readers/partition.c). Internal to readers/. */
#ifndef CB_READERS_PARTITION_FILTER_H
#define CB_READERS_PARTITION_FILTER_H

#include <jansson.h>
#include <libpq-fe.h>
#include "cbatch/error.h"

/* A partition's condition: SQL text with parameters $first.. and their values. */
typedef struct cb__rd_filter {
	char *sql;     /* NULL: no condition (not a partition, or an identical copy) */
	char **values; /* nvalues strings */
	size_t nvalues;
} cb__rd_filter;

/*
 * The condition for partition @p part (cb_step_context_partition; NULL:
 * none): a key range (lo inclusive, hi exclusive, by row comparison, so the
 * reader's index on the keys serves it) or a hash bucket, its parameters
 * numbered from @p first_param. @return 0, CB_EINVAL (a malformed partition,
 * naming @p what), CB_ENOMEM.
 */
int cb__rd_partition_filter(cb__rd_filter *out, PGconn *conn, const json_t *part,
			    size_t first_param, const char *what, cb_error *err);

void cb__rd_filter_free(cb__rd_filter *f);

#endif
