/**
 * @file metrics.h
 * Repository metrics: the lock's outcomes (from batch_lock_audit), the step
 * executions' counts and chunk latency, for Prometheus or as JSON.
 *
 * Every number comes from the repository, so every process (and every host)
 * that asks sees the same values; nothing is kept in memory.
 */
#ifndef CBATCH_METRICS_H
#define CBATCH_METRICS_H

#include <jansson.h>
#include <libpq-fe.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Repository metrics in Prometheus text exposition format: lock outcomes
 * (lock_acquire_success_count, lock_acquire_failed_count,
 * lock_lease_expired_count, heartbeat_failure_count,
 * manual_rerun_lock_bypass_count), duplicate_target_write_count, items
 * read/written/skipped per job, and of partitioned steps: items read and
 * written per job and worker (partition_worker_items_read_count,
 * partition_worker_items_written_count; counters, a partition counting for
 * the worker that claimed it last, over the partitions of the newest 100
 * executions and of running ones) and the partitions of running executions
 * per job and status (partitions, a gauge). Label values are escaped as the
 * exposition format says. Ownership: @p out receives a new string (free() it); @p conn and @p err are
 * borrowed. @return 0, CB_EDB, CB_ENOMEM.
 */
int cb_metrics_text(char **out, PGconn *conn, cb_error *err);

/**
 * The same metrics as one JSON document: {"metrics": [{"name", "help",
 * "type": "counter" or "gauge", "labels": {"job": ..., and "worker" or
 * "status" for the partition series} (empty for none), "value"}, ...]},
 * one element per series, ordered by name and labels. Ownership: @p out receives
 * a new reference (json_decref it); @p conn and @p err are borrowed.
 * @return 0, CB_EDB, CB_ENOMEM.
 */
int cb_metrics_json(json_t **out, PGconn *conn, cb_error *err);

#ifdef __cplusplus
}
#endif
#endif
