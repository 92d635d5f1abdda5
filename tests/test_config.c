/*
 * test_config.c - the library's pipeline YAML reader (faucet/config.h,
 * src/config/config.c) against the backend table it reads fields from.
 *
 * The command's black-box checks of the same reader are
 * tests/cli/test_config.sh; the Python package's are
 * bindings/python/tests/test_config.py.  Here: that no field of any
 * backend row is silently dropped, that a URL option and the YAML field of
 * the same name give the same store config, and the handle's accessors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <faucet/faucet.h>

#include "testutil.h"
#include "util.h"
#include "stores/registry.h"

static char *write_yaml(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A temp file holding the formatted text; caller unlinks and frees. */
static char *write_yaml(const char *fmt, ...)
{
	char *path = faucet__sprintf("%s/faucet-test-config-XXXXXX", P_tmpdir);
	va_list ap;
	FILE *f;
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	va_start(ap, fmt);
	assert_true(vfprintf(f, fmt, ap) >= 0);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

/* Everything a store config says, as one line, to compare two of them. */
static char *describe(const faucet_store_config *c)
{
	return faucet__sprintf("type=%s path=%s url=%s table=%s ensure=%d pool=%d ns=%s index=%d "
			       "replicas=%d wait=%d enc=%s",
			       or_dash(c->type), or_dash(c->path), or_dash(c->url),
			       or_dash(c->table), c->ensure_table, c->max_connections,
			       or_dash(c->namespace_name), c->redis_index, c->redis_min_replicas,
			       c->redis_wait_timeout_ms,
			       c->encryption ? or_dash(c->encryption->key) : "-");
}

/* The store config a YAML text gives, described; NULL when refused. */
static char *load_described(const char *text)
{
	char *path = write_yaml("%s", text), *out = NULL;
	faucet_config *cfg = NULL;

	if (faucet_config_load(&cfg, path) == 0) {
		assert_non_null(faucet_config_store(cfg));
		out = describe(faucet_config_store(cfg));
		faucet_config_free(cfg);
	} else {
		assert_null(cfg);
	}
	unlink(path);
	free(path);
	return out;
}

/* A value of each kind the table names, as YAML. */
static const char *sample(const faucet_backend_field *f)
{
	if (strcmp(f->kind, "number") == 0)
		return "3";
	if (strcmp(f->kind, "bool") == 0)
		return "true";
	if (strcmp(f->kind, "duration") == 0)
		return "2s";
	if (strcmp(f->kind, "list") == 0)
		return "[\"h1:1\", \"h2:2\"]";
	if (strcmp(f->kind, "mapping") == 0)
		return "{key: a-key-of-some-length}";
	return "\"sample-text\"";
}

/* What a backend needs beside the field under test for its config to be
 * whole (etcd: endpoints and prefix, or a url). */
static const char *companions(const faucet_backend_info *be, const char *field)
{
	if (strcmp(be->type, "etcd") != 0 || strcmp(field, "url") == 0)
		return "";
	if (strcmp(field, "endpoints") == 0)
		return "prefix: p, ";
	if (strcmp(field, "prefix") == 0)
		return "endpoints: [\"h:1\"], ";
	return "endpoints: [\"h:1\"], prefix: p, ";
}

/* Every field of every row is read and lands somewhere: the config with
 * the field differs from the config without it.  A field the reader let
 * through without reading (the table grew, the reader did not) fails. */
static void every_field_of_every_backend_is_read(void **state)
{
	const faucet_backend_info *be;
	size_t checked = 0;

	(void)state;
	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
			char *with = faucet__sprintf("state: {type: %s, config: {%s%s: %s}}\n",
						     be->type, companions(be, f->name), f->name,
						     sample(f));
			char *without = faucet__sprintf("state: {type: %s, config: {%s}}\n",
							be->type, companions(be, f->name));
			char *a = load_described(with), *b = NULL;

			assert_non_null(with);
			assert_non_null(without);
			if (a == NULL)
				fail_msg("%s.%s: refused: %s", be->type, f->name,
					 faucet_error_last()->message);
			/* etcd without its url or endpoints is refused: the
			 * field made the difference. */
			b = load_described(without);
			if (b != NULL && strcmp(a, b) == 0)
				fail_msg("%s.%s was not read: %s", be->type, f->name, a);
			free(a);
			free(b);
			free(with);
			free(without);
			checked++;
		}
	}
	assert_true(checked >= 20);
}

/* A URL option and the YAML field of the same name give the same config,
 * and refuse the same text with the same words. */
static void a_url_option_and_a_yaml_field_read_alike(void **state)
{
	static const struct {
		const char *url;  /* with its options */
		const char *yaml; /* the same as fields */
	} same[] = {
		{"postgres://u@h:5432/db?table=t_1&ensure_table=false&max_connections=7",
		 "state: {type: postgres, config: {url: \"postgres://u@h:5432/db\", table: t_1, "
		 "ensure_table: false, max_connections: 7}}\n"},
		{"redis://h:1/0?namespace=ns&index=yes&max_connections=2",
		 "state: {type: redis, config: {url: \"redis://h:1/0\", namespace: ns, index: yes, "
		 "max_connections: 2}}\n"},
		{"redis-sentinel://h:1/m?min_replicas=2&wait_timeout=500ms",
		 "state: {type: redis-sentinel, config: {url: \"redis-sentinel://h:1/m\", "
		 "min_replicas: 2, wait_timeout: 500ms}}\n"},
	};
	(void)state;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(same); i++) {
		const faucet__backend_desc *be = faucet__backend_by_url(same[i].url, 0);
		faucet_store_config cfg = FAUCET_STORE_CONFIG_INIT;
		char *copy = faucet__strdup(same[i].url), *from_url, *from_yaml;

		assert_non_null(be);
		assert_int_equal(be->from_url(copy, &cfg), 0);
		from_url = describe(&cfg);
		from_yaml = load_described(same[i].yaml);
		assert_non_null(from_yaml);
		/* The URL keeps its options apart: compare all but the url. */
		assert_string_equal(strstr(from_url, " table="), strstr(from_yaml, " table="));
		free(from_url);
		free(from_yaml);
		free(copy);
	}
	{
		faucet_store *s = NULL;
		char *yaml = load_described(
			"state: {type: postgres, config: {url: \"postgres://h/db\", "
			"max_connections: 1001}}\n");

		assert_null(yaml);
		assert_non_null(strstr(faucet_error_last()->message,
				       "state.config.max_connections must be a whole number from 1 "
				       "to 1000, got '1001'"));
		assert_int_equal(faucet_store_open_url(&s, "postgres://h/db?max_connections=1001"),
				 FAUCET_ECONFIG);
		assert_non_null(strstr(faucet_error_last()->message,
				       "option 'max_connections' must be a whole number from 1 "
				       "to 1000, got '1001'"));
	}
}

static void the_handle_gives_name_backfill_and_store(void **state)
{
	char *path = write_yaml("name: orders\n"
				"sources: {anything: [goes, here]}\n"
				"backfill: {window: 6h, concurrency: 3, timezone: UTC, "
				"command: [job, \"--from\", \"${backfill.start}\"]}\n");
	char *bare = write_yaml("name: x\n");
	const faucet_config_backfill *bf;
	faucet_config *cfg = NULL;

	(void)state;
	assert_int_equal(faucet_config_load(&cfg, path), 0);
	assert_string_equal(faucet_config_name(cfg), "orders");
	assert_string_equal(faucet_config_path(cfg), path);
	assert_null(faucet_config_store(cfg));
	bf = faucet_config_backfill_defaults(cfg);
	assert_string_equal(bf->window, "6h");
	assert_int_equal(bf->concurrency, 3);
	assert_string_equal(bf->timezone, "UTC");
	assert_int_equal(bf->command_count, 3);
	assert_string_equal(bf->command[2], "${backfill.start}");
	assert_null(bf->command[3]);
	faucet_config_free(cfg);
	assert_int_equal(faucet_config_load(&cfg, bare), 0);
	bf = faucet_config_backfill_defaults(cfg);
	assert_null(bf->window);
	assert_null(bf->command);
	assert_int_equal(bf->command_count, 0);
	faucet_config_free(cfg);
	faucet_config_free(NULL);
	assert_int_equal(faucet_config_load(NULL, path), FAUCET_EINVALID);
	unlink(path);
	unlink(bare);
	free(path);
	free(bare);
}

static void values_from_the_environment_are_scrubbed(void **state)
{
	char *path = write_yaml("state: {type: file, config: {path: \"${env:TEST_CONFIG_DIR}\"}}\n");
	faucet_config *cfg = NULL;
	char *shown;

	(void)state;
	assert_int_equal(setenv("TEST_CONFIG_DIR", "/some/secret/place", 1), 0);
	assert_int_equal(faucet_config_load(&cfg, path), 0);
	assert_string_equal(faucet_config_store(cfg)->path, "/some/secret/place");
	shown = faucet_config_scrub(cfg, "cannot open /some/secret/place/x");
	assert_string_equal(shown, "cannot open ${env:TEST_CONFIG_DIR}/x");
	free(shown);
	shown = faucet_config_scrub(NULL, "as is");
	assert_string_equal(shown, "as is");
	free(shown);
	faucet_config_free(cfg);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_field_of_every_backend_is_read),
		cmocka_unit_test(a_url_option_and_a_yaml_field_read_alike),
		cmocka_unit_test(the_handle_gives_name_backfill_and_store),
		cmocka_unit_test(values_from_the_environment_are_scrubbed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
