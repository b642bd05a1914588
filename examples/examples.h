/* The example jobs shipped in cbatch-examples. */
#ifndef CB_EXAMPLES_H
#define CB_EXAMPLES_H

#include <cbatch.h>
/* examples/<name>/schema.sql, embedded at build time (name "ledger/schema.sql"):
 * cb_example_schemas[], cb_example_schemas_count. */
#include "example_sql.h"

/* Register the `ledger` job. */
int ledger_register(cb_registry *reg, cb_error *err);

/* The ledger step's parts (reader, processor, writers): also the parts of
 * each partition of `ledger_partitioned`. */
int ledger_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err);

/* Register the `ledger_partitioned` job. */
int ledger_partitioned_register(cb_registry *reg, cb_error *err);

/* Register the `outbox` job. */
int outbox_register(cb_registry *reg, cb_error *err);

/* Register the `settlement` job. */
int settlement_register(cb_registry *reg, cb_error *err);

/* Register the `ledger_export` job. */
int ledger_export_register(cb_registry *reg, cb_error *err);

/* Register the `csv_import` job. */
int csv_import_register(cb_registry *reg, cb_error *err);

/* Register the `sales_totals` job. */
int sales_totals_register(cb_registry *reg, cb_error *err);

/* Register the `tick` job. */
int tick_register(cb_registry *reg, cb_error *err);

/* The throttle (throttle.c): with `-sleepMs:long=N` (N > 0) in the step's
 * parameters, add a writer that waits N ms first in each chunk; else nothing. */
int example_throttle_add(cb_chunk_parts *parts, const cb_step_context *sc, cb_error *err);

/* `example-setup`: create an example's tables and demo data. */
int examples_setup_command(void *ctx, PGconn *conn, int argc, char **argv);

#endif
