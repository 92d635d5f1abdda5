/*
 * metrics.c - the process-wide registry of counters and gauges.
 *
 * Metrics are few and updated rarely (a key migration, a finished backfill
 * unit), so a mutex-protected array searched linearly is all it takes.
 * Rendering sorts by name, then labels, so the text is stable.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "durable.h"
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

int faucet_metrics_render(char **out)
{
	faucet_buf buf = FAUCET_BUF_INIT;
	const char *last = NULL;

	pthread_mutex_lock(&registry_lock);
	qsort(registry, registry_len, sizeof(*registry), compare_metrics);
	for (size_t i = 0; i < registry_len; i++) {
		const metric *m = &registry[i];
		if (last == NULL || strcmp(last, m->name) != 0)
			(void)faucet_buf_printf(&buf, "# TYPE %s %s\n", m->name,
						m->is_gauge ? "gauge" : "counter");
		last = m->name;
		(void)faucet_buf_puts(&buf, m->name);
		if (m->labels[0] != '\0')
			(void)faucet_buf_printf(&buf, "{%s}", m->labels);
		if (m->is_gauge)
			(void)faucet_buf_printf(&buf, " %.17g\n", m->gauge);
		else
			(void)faucet_buf_printf(&buf, " %" PRIu64 "\n", m->count);
	}
	pthread_mutex_unlock(&registry_lock);
	*out = faucet_buf_detach(&buf);
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
	rc = faucet__write_file(path, "metrics file", text, strlen(text));
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
