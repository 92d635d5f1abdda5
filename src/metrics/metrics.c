/*
 * metrics.c - the process-wide registry of counters and gauges.
 *
 * Metrics are few and updated rarely (a key migration, a finished backfill
 * unit), so a mutex-protected array searched linearly is all it takes.
 * Rendering sorts by name, then labels, so the text is stable, and gives
 * every metric libfaucet writes its # HELP and # TYPE lines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <faucet/metrics.h>

typedef struct {
	char *name;
	char *labels;
	int is_gauge;
	uint64_t count;
	double gauge;
} metric;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static metric *registry;
static size_t registry_len, registry_cap;

/* Find or create under the lock; NULL on allocation failure. */
static metric *lookup_locked(const char *name, const char *labels, int is_gauge)
{
	metric *m, *grown;

	for (size_t i = 0; i < registry_len; i++) {
		if (strcmp(registry[i].name, name) == 0 && strcmp(registry[i].labels, labels) == 0)
			return &registry[i];
	}
	grown = faucet__reserve(registry, &registry_cap, registry_len + 1, sizeof(*registry), 16);
	if (grown == NULL)
		return NULL;
	registry = grown;
	m = &registry[registry_len];
	memset(m, 0, sizeof(*m));
	m->name = faucet__strdup(name);
	m->labels = faucet__strdup(labels);
	if (m->name == NULL || m->labels == NULL) {
		free(m->name);
		free(m->labels);
		return NULL;
	}
	m->is_gauge = is_gauge;
	registry_len++;
	return m;
}

int faucet_metrics_counter_add(const char *name, const char *labels, uint64_t n)
{
	metric *m;

	pthread_mutex_lock(&registry_lock);
	m = lookup_locked(name, labels ? labels : "", 0);
	if (m != NULL)
		m->count += n;
	pthread_mutex_unlock(&registry_lock);
	return m ? 0 : FAUCET_ENOMEM;
}

int faucet_metrics_gauge_set(const char *name, const char *labels, double value)
{
	metric *m;

	pthread_mutex_lock(&registry_lock);
	m = lookup_locked(name, labels ? labels : "", 1);
	if (m != NULL)
		m->gauge = value;
	pthread_mutex_unlock(&registry_lock);
	return m ? 0 : FAUCET_ENOMEM;
}

uint64_t faucet_metrics_counter_get(const char *name, const char *labels)
{
	uint64_t n = 0;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_len; i++) {
		if (strcmp(registry[i].name, name) == 0 &&
		    strcmp(registry[i].labels, labels ? labels : "") == 0)
			n = registry[i].count;
	}
	pthread_mutex_unlock(&registry_lock);
	return n;
}

static int compare_metrics(const void *pa, const void *pb)
{
	const metric *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	return c != 0 ? c : strcmp(a->labels, b->labels);
}

/* What each metric libfaucet writes means, for the # HELP line, and its
 * Prometheus type.  A summary is kept as two samples, NAME_sum (a gauge)
 * and NAME_count (a counter), announced once under NAME. */
static const struct {
	const char *name;
	const char *type;
	const char *help;
} descriptions[] = {
	{"faucet_backfill_units_total", "counter",
	 "Backfill units that reached an outcome in this run, by outcome (ok, err, skipped)."},
	{"faucet_backfill_units", "gauge",
	 "Backfill units of the range by status (done, failed, running, pending)."},
	{"faucet_backfill_progress_ratio", "gauge",
	 "Share of the range's units that are done (failed units are not progress)."},
	{"faucet_backfill_unit_duration_seconds", "summary",
	 "Run time of the backfill units that reached an outcome in this run."},
	{"faucet_backfill_last_update_timestamp_seconds", "gauge",
	 "Unix time at which these backfill metrics were last updated."},
	{"faucet_state_key_migrations_total", "counter",
	 "State keys moved from a legacy rendering, by outcome."},
};

/* The family a sample belongs to: its name, or for NAME_sum / NAME_count
 * of a known summary, NAME.  *len receives the family name's length. */
static size_t family_of(const char *name, int *desc)
{
	size_t n = strlen(name);

	*desc = -1;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(descriptions); i++) {
		size_t d = strlen(descriptions[i].name);
		if (strncmp(name, descriptions[i].name, d) != 0)
			continue;
		if (name[d] == '\0' || (strcmp(descriptions[i].type, "summary") == 0 &&
					(strcmp(name + d, "_sum") == 0 || strcmp(name + d, "_count") == 0))) {
			*desc = (int)i;
			return d;
		}
	}
	return n;
}

/* The shortest of %.15g / %.17g that reads back as the same double, so
 * 0.5 stays "0.5" and a timestamp does not grow a tail of noise digits. */
static void put_double(faucet_buf *buf, double v)
{
	char text[64];

	(void)snprintf(text, sizeof(text), "%.15g", v);
	if (strtod(text, NULL) != v)
		(void)snprintf(text, sizeof(text), "%.17g", v);
	(void)faucet__buf_printf(buf, " %s\n", text);
}

int faucet_metrics_render(char **out)
{
	faucet_buf buf = FAUCET_BUF_INIT;
	const char *last = NULL;
	size_t last_len = 0;

	pthread_mutex_lock(&registry_lock);
	qsort(registry, registry_len, sizeof(*registry), compare_metrics);
	for (size_t i = 0; i < registry_len; i++) {
		const metric *m = &registry[i];
		int desc;
		size_t fam = family_of(m->name, &desc);

		if (last == NULL || last_len != fam || strncmp(last, m->name, fam) != 0) {
			if (desc >= 0)
				(void)faucet__buf_printf(&buf, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)fam,
							m->name, descriptions[desc].help, (int)fam,
							m->name, descriptions[desc].type);
			else
				(void)faucet__buf_printf(&buf, "# TYPE %s %s\n", m->name,
							m->is_gauge ? "gauge" : "counter");
		}
		last = m->name;
		last_len = fam;
		(void)faucet__buf_puts(&buf, m->name);
		if (m->labels[0] != '\0')
			(void)faucet__buf_printf(&buf, "{%s}", m->labels);
		if (m->is_gauge)
			put_double(&buf, m->gauge);
		else
			(void)faucet__buf_printf(&buf, " %" PRIu64 "\n", m->count);
	}
	pthread_mutex_unlock(&registry_lock);
	*out = faucet__buf_detach(&buf);
	return *out ? 0 : FAUCET_ENOMEM;
}

int faucet_metrics_write_file(const char *path)
{
	char *text = NULL;
	int rc = faucet_metrics_render(&text);

	if (rc != 0)
		return rc;
	/* The one durable-write routine: a temp name nobody can predict and
	 * O_EXCL|O_NOFOLLOW, because metrics often go to a shared directory
	 * (/tmp, a textfile collector's) where anyone could plant a symlink at
	 * a predictable name and make us overwrite its target. */
	rc = faucet_write_file(path, "metrics file", text, strlen(text));
	free(text);
	return rc;
}

void faucet_metrics_reset(void)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_len; i++) {
		free(registry[i].name);
		free(registry[i].labels);
	}
	free(registry);
	registry = NULL;
	registry_len = registry_cap = 0;
	pthread_mutex_unlock(&registry_lock);
}
