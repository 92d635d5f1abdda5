/*
 * faucet/metrics.h - the in-process metrics registry.
 *
 * libfaucet counts what operators alert on (for example
 * faucet_state_key_migrations_total{outcome="moved"}) in a process-wide,
 * thread-safe registry of counters and gauges that renders as Prometheus
 * text exposition format.
 */
#ifndef FAUCET_METRICS_H
#define FAUCET_METRICS_H

#include <stdint.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Add `n` to the counter `name` with `labels`, a Prometheus label list
 * without braces (`outcome="moved"`, or "" for none). */
int faucet_metrics_counter_add(const char *name, const char *labels, uint64_t n);

/* Set the gauge `name`{labels} to `value`. */
int faucet_metrics_gauge_set(const char *name, const char *labels, double value);

/* The current value of counter `name`{labels}; 0 when never counted. */
uint64_t faucet_metrics_counter_get(const char *name, const char *labels);

/* The whole registry as Prometheus text (# TYPE lines, one sample a line,
 * sorted by name then labels).  Caller frees. */
int faucet_metrics_render(char **out);

/* Write the rendered registry to the file `path` (a scraper's textfile):
 * replaced atomically and durably, created 0600; an existing device, FIFO or
 * symlink is written through instead. */
int faucet_metrics_write_file(const char *path);

/* Forget every metric (for tests and for a runner that starts afresh). */
void faucet_metrics_reset(void);

#ifdef __cplusplus
}
#endif

#endif
