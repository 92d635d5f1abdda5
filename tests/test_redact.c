/*
 * test_redact.c - faucet_url_redact: every spelling of a password in a
 * store address comes out as "***", and the rest of the address stays so a
 * message still says where.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void assert_redacted(const char *url, const char *want)
{
	char *got = faucet_url_redact(url);

	assert_non_null(got);
	if (strcmp(got, want) != 0)
		fail_msg("redact(%s) = %s, want %s", url, got, want);
	assert_null(strstr(got, "s3cret"));
	free(got);
}

static void user_info_passwords_are_hidden(void **state)
{
	(void)state;
	assert_redacted("postgres://u:s3cret@db:5432/x", "postgres://u:***@db:5432/x");
	assert_redacted("postgresql://u:s3cret@db/x?table=t", "postgresql://u:***@db/x?table=t");
	assert_redacted("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0");
	assert_redacted("redis://user:s3cret@cache/0?namespace=n",
			"redis://user:***@cache/0?namespace=n");
	/* An unescaped '@' inside the password: the last '@' ends it. */
	assert_redacted("postgres://u:s3c@ret@db/x", "postgres://u:***@db/x");
	assert_redacted("postgres://u:p@s3cret@db/x", "postgres://u:***@db/x");
	/* Redis refuses a password without its ':'; the message hides it. */
	assert_redacted("redis://s3cret@cache:6379", "redis://***@cache:6379");
	/* The Sentinel form: a host list, the same spellings. */
	assert_redacted("redis-sentinel://s3cret@s1:26379,s2:26379/m", "redis-sentinel://***@s1:26379,s2:26379/m");
	assert_redacted("redis-sentinel://:s3cret@s1:26379,s2:26379/m/0?min_replicas=1",
			"redis-sentinel://:***@s1:26379,s2:26379/m/0?min_replicas=1");
}

static void query_passwords_are_hidden(void **state)
{
	(void)state;
	assert_redacted("postgres://u@db/x?password=s3cret", "postgres://u@db/x?password=***");
	assert_redacted("postgres://db/x?sslmode=disable&password=s3cret&table=t",
			"postgres://db/x?sslmode=disable&password=***&table=t");
	assert_redacted("postgres://db/x?sslpassword=s3cret", "postgres://db/x?sslpassword=***");
	assert_redacted("postgres://db/x?PASSWORD=s3cret#f", "postgres://db/x?PASSWORD=***#f");
	assert_redacted("redis://cache/0?password=s3cret&namespace=n",
			"redis://cache/0?password=***&namespace=n");
	/* Both at once. */
	assert_redacted("postgres://u:s3cret@db/x?password=s3cret",
			"postgres://u:***@db/x?password=***");
}

static void keyword_value_passwords_are_hidden(void **state)
{
	(void)state;
	assert_redacted("host=db password=s3cret dbname=x", "host=db password=*** dbname=x");
	assert_redacted("host=db password = 's3cret \\' x' port=5",
			"host=db password = *** port=5");
	assert_redacted("password=s3cret", "password=***");
}

static void addresses_without_secrets_are_unchanged(void **state)
{
	(void)state;
	assert_redacted("file:.faucet-state", "file:.faucet-state");
	assert_redacted("sqlite:/tmp/a.db", "sqlite:/tmp/a.db");
	assert_redacted("memory:", "memory:");
	assert_redacted("postgres://u@db:5432/x?table=t", "postgres://u@db:5432/x?table=t");
	assert_redacted("redis://cache:6379/0?namespace=n", "redis://cache:6379/0?namespace=n");
	assert_redacted("postgres://db/x?passwordless=1", "postgres://db/x?passwordless=1");
	assert_redacted("", "");
}

static void store_errors_do_not_echo_a_password(void **state)
{
	faucet_store *s = NULL;
	(void)state;
	assert_int_not_equal(faucet_store_open_url(&s, "memory:?password=s3cret"), 0);
	assert_null(s);
	assert_null(strstr(faucet_error_last()->message, "s3cret"));
	tu_assert_error_contains("password=***");
	assert_int_not_equal(faucet_store_open_url(&s, "nosuch://u:s3cret@h/?password=s3cret"), 0);
	assert_null(strstr(faucet_error_last()->message, "s3cret"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(user_info_passwords_are_hidden),
		cmocka_unit_test(query_passwords_are_hidden),
		cmocka_unit_test(keyword_value_passwords_are_hidden),
		cmocka_unit_test(addresses_without_secrets_are_unchanged),
		cmocka_unit_test(store_errors_do_not_echo_a_password),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
