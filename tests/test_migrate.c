/*
 * test_migrate.c - moving a bookmark from a legacy key to the current one:
 * moves once, never clobbers a newer value, survives an undeletable legacy
 * key, loses a race gracefully, and counts what it did.
 *
 * The odd stores are built the way a backend author would: a
 * faucet_store_backend whose slots forward to a memory store, with one
 * behaviour changed.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include <faucet/sys/store_backend.h>

#define METRIC "faucet_state_key_migrations_total"

typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	int sticky;         /* every delete fails */
	const char *broken; /* get of this key fails */
} wrapped;

static int w_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	wrapped *w = (wrapped *)b;

	if (w->broken && strcmp(key, w->broken) == 0)
		return faucet_error_set(FAUCET_EIO, "reading '%s': disk on fire", key);
	return faucet_store_get(w->inner, key, out);
}

static int w_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(((wrapped *)b)->inner, key, v);
}

static int w_del(faucet_store_backend *b, const char *key)
{
	wrapped *w = (wrapped *)b;

	if (w->sticky)
		return faucet_error_set(FAUCET_ERROR, "read-only");
	return faucet_store_delete(w->inner, key);
}

static int w_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		 const faucet_value *value, int *written)
{
	(void)b;
	(void)key;
	(void)expected;
	(void)value;
	*written = 0; /* somebody else always got there first */
	return 0;
}

static void w_free(faucet_store_backend *b)
{
	faucet_store_free(((wrapped *)b)->inner);
	free(b);
}

static faucet_store *open_wrapped(int sticky, int racing, const char *broken)
{
	wrapped *w = calloc(1, sizeof(*w));
	faucet_store *s = NULL;

	assert_non_null(w);
	assert_int_equal(faucet_store_open_memory(&w->inner), 0);
	w->base.version = FAUCET_STORE_BACKEND_VERSION;
	w->base.name = "wrapped";
	w->base.get = w_get;
	w->base.put = w_put;
	w->base.del = w_del;
	w->base.compare_and_put = racing ? w_cas : NULL;
	w->base.free = w_free;
	w->sticky = sticky;
	w->broken = broken;
	assert_int_equal(faucet_store_new(&s, &w->base), 0);
	return s;
}

static int reset_metrics(void **state)
{
	(void)state;
	faucet_metrics_reset();
	return 0;
}

static faucet_migration_kind migrate(faucet_store *s, const char *key,
				     const char *const *candidates, size_t count, char **from)
{
	faucet_migration_kind kind = (faucet_migration_kind)-1;

	if (faucet_migrate_state_key(s, key, candidates, count, &kind, from) != 0)
		fail_msg("migrate %s: %s", key, faucet_error_last()->message);
	return kind;
}

static void migration_moves_once_and_never_clobbers(void **state)
{
	static const char *const old_only[] = {"p::old"};
	static const char *const with_self[] = {"p::new", "p::old"};
	faucet_store *s = NULL;
	char *from = (char *)0x1;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(migrate(s, "p::new", NULL, 0, &from), FAUCET_MIGRATION_FRESH);
	assert_null(from);
	assert_int_equal(migrate(s, "p::new", old_only, 1, &from), FAUCET_MIGRATION_FRESH);
	assert_null(from);

	tu_put(s, "p::old", "{\"page\":3}");
	assert_int_equal(migrate(s, "p::new", with_self, 2, &from), FAUCET_MIGRATION_MOVED);
	assert_string_equal(from, "p::old");
	free(from);
	tu_assert_value(s, "p::new", "{\"page\":3}");
	tu_assert_value(s, "p::old", NULL);
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"moved\""), 1);

	/* A value reappearing under the old key never overwrites the new one. */
	tu_put(s, "p::old", "1");
	assert_int_equal(migrate(s, "p::new", old_only, 1, NULL), FAUCET_MIGRATION_CURRENT);
	tu_assert_value(s, "p::new", "{\"page\":3}");
	tu_assert_value(s, "p::old", "1");
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"moved\""), 1);
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"raced\""), 0);
	faucet_store_free(s);
}

static void the_first_candidate_holding_a_value_wins(void **state)
{
	static const char *const candidates[] = {"p::v0", "p::v1", "p::v2"};
	faucet_store *s = NULL;
	char *from = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "p::v1", "\"one\"");
	tu_put(s, "p::v2", "\"two\"");
	assert_int_equal(migrate(s, "p::new", candidates, 3, &from), FAUCET_MIGRATION_MOVED);
	assert_string_equal(from, "p::v1");
	free(from);
	tu_assert_value(s, "p::new", "\"one\"");
	tu_assert_value(s, "p::v2", "\"two\"");
	faucet_store_free(s);
}

static void a_legacy_key_that_cannot_be_removed_still_moves(void **state)
{
	static const char *const old_only[] = {"p::old"};
	faucet_store *sticky = open_wrapped(1, 0, NULL), *racing = open_wrapped(0, 1, NULL);
	faucet_value *v = NULL;
	char *from = NULL;
	(void)state;

	tu_put(sticky, "p::old", "2");
	assert_int_equal(migrate(sticky, "p::new", old_only, 1, &from), FAUCET_MIGRATION_MOVED);
	assert_string_equal(from, "p::old");
	free(from);
	tu_assert_value(sticky, "p::new", "2");
	tu_assert_value(sticky, "p::old", "2"); /* the stale copy stays */
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"moved\""), 1);
	/* The next run sees the current key first. */
	assert_int_equal(migrate(sticky, "p::new", old_only, 1, NULL), FAUCET_MIGRATION_CURRENT);

	/* The racing store still gets, puts and deletes normally. */
	tu_put(racing, "k", "1");
	assert_int_equal(faucet_store_delete(racing, "k"), 0);
	assert_int_equal(faucet_store_get(racing, "k", &v), 0);
	assert_null(v);
	faucet_store_free(sticky);
	faucet_store_free(racing);
}

static void a_concurrent_writer_wins_the_race(void **state)
{
	static const char *const old_only[] = {"p::old"};
	faucet_store *s = open_wrapped(0, 1, NULL);
	char *from = (char *)0x1;
	char *text = NULL;
	(void)state;

	tu_put(s, "p::old", "1");
	assert_int_equal(migrate(s, "p::new", old_only, 1, &from), FAUCET_MIGRATION_CURRENT);
	assert_null(from);
	tu_assert_value(s, "p::old", "1"); /* the loser deletes nothing */
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"raced\""), 1);
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"moved\""), 0);

	assert_int_equal(faucet_metrics_render(&text), 0);
	if (strstr(text, "# TYPE faucet_state_key_migrations_total counter\n") == NULL ||
	    strstr(text, "faucet_state_key_migrations_total{outcome=\"raced\"} 1\n") == NULL)
		fail_msg("unexpected metrics text:\n%s", text);
	free(text);
	faucet_store_free(s);
}

static void both_outcomes_render_as_prometheus_text(void **state)
{
	static const char *const old_only[] = {"p::old"};
	faucet_store *mem = NULL, *racing = open_wrapped(0, 1, NULL);
	char *text = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&mem), 0);
	tu_put(mem, "p::old", "1");
	tu_put(racing, "p::old", "1");
	assert_int_equal(migrate(mem, "p::new", old_only, 1, NULL), FAUCET_MIGRATION_MOVED);
	assert_int_equal(migrate(racing, "p::new", old_only, 1, NULL), FAUCET_MIGRATION_CURRENT);
	assert_int_equal(faucet_metrics_render(&text), 0);
	assert_string_equal(text, "# HELP faucet_state_key_migrations_total State keys moved from a "
				  "legacy rendering, by outcome.\n"
				  "# TYPE faucet_state_key_migrations_total counter\n"
				  "faucet_state_key_migrations_total{outcome=\"moved\"} 1\n"
				  "faucet_state_key_migrations_total{outcome=\"raced\"} 1\n");
	free(text);
	faucet_store_free(mem);
	faucet_store_free(racing);
}

static void read_failures_and_bad_arguments_are_errors(void **state)
{
	static const char *const old_only[] = {"p::old"};
	static const char *const invalid[] = {"p::a b"};
	static const char *const with_null[] = {NULL};
	faucet_store *broken_current = open_wrapped(0, 0, "p::new");
	faucet_store *broken_old = open_wrapped(0, 0, "p::old");
	faucet_migration_kind kind;
	char *from = (char *)0x1;
	(void)state;

	assert_int_equal(faucet_migrate_state_key(broken_current, "p::new", old_only, 1, &kind,
						  &from), FAUCET_EIO);
	tu_assert_error_contains("disk on fire");
	assert_null(from);
	tu_put(broken_old, "p::old", "1");
	assert_int_equal(faucet_migrate_state_key(broken_old, "p::new", old_only, 1, &kind, NULL),
			 FAUCET_EIO);
	tu_assert_value(broken_old, "p::new", NULL);
	assert_int_equal(faucet_migrate_state_key(broken_old, "p::new", invalid, 1, &kind, NULL),
			 FAUCET_EINVALID);
	tu_assert_error_contains("illegal character");
	assert_int_equal(faucet_migrate_state_key(broken_old, "p::new", with_null, 1, &kind, NULL),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_migrate_state_key(broken_old, "p::new", NULL, 1, &kind, NULL),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_migrate_state_key(broken_old, "bad key", old_only, 1, &kind, NULL),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_metrics_counter_get(METRIC, "outcome=\"moved\""), 0);
	faucet_store_free(broken_current);
	faucet_store_free(broken_old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(migration_moves_once_and_never_clobbers, reset_metrics),
		cmocka_unit_test_setup(the_first_candidate_holding_a_value_wins, reset_metrics),
		cmocka_unit_test_setup(a_legacy_key_that_cannot_be_removed_still_moves, reset_metrics),
		cmocka_unit_test_setup(a_concurrent_writer_wins_the_race, reset_metrics),
		cmocka_unit_test_setup(both_outcomes_render_as_prometheus_text, reset_metrics),
		cmocka_unit_test_setup(read_failures_and_bad_arguments_are_errors, reset_metrics),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	faucet_metrics_reset();
	return failed;
}
