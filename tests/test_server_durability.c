/*
 * test_server_durability.c - `doctor` on PostgreSQL and Redis says when the
 * server is configured to acknowledge writes it may lose in a crash.
 *
 * The throw-away servers of scripts/test-servers.sh run that way on purpose
 * (PostgreSQL with fsync=off, Redis without an append-only file), so the
 * warning is what the shared servers must produce.  The Redis tests also
 * switch the shared server to appendonly yes / appendfsync always for a
 * moment (the pass) and add an ACL user that may not run CONFIG (the skip);
 * both are undone by the tests' teardown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "contract/servers.h"

static faucet_store *open_url(const char *url)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	return s;
}

/* The store's "durability" probe (its report in *report, caller frees),
 * after asserting the others passed. */
static const faucet_probe *durability(faucet_store *s, faucet_check_report **report)
{
	const faucet_probe *found = NULL;

	assert_int_equal(faucet_store_check(s, NULL, report), 0);
	assert_int_equal(faucet_check_report_failed_count(*report), 0);
	for (size_t i = 0; i < faucet_check_report_count(*report); i++) {
		const faucet_probe *p = faucet_check_report_probe(*report, i);
		if (strcmp(p->name, "durability") == 0) {
			found = p;
		} else if (strcmp(p->name, "replication") == 0) {
			/* The test servers run alone: a failover could lose an
			 * acknowledged commit, and doctor says so (doc/design.md
			 * §3.9). */
			assert_int_equal(p->status, FAUCET_PROBE_WARN);
			assert_non_null(p->reason);
			assert_non_null(strstr(p->reason, "without a synchronous standby"));
			ts_assert_no_secret(p->reason);
		} else {
			assert_int_equal(p->status, FAUCET_PROBE_PASS);
		}
	}
	if (found == NULL)
		fail_msg("no durability probe");
	if (found->reason)
		ts_assert_no_secret(found->reason);
	if (found->hint)
		ts_assert_no_secret(found->hint);
	return found;
}

static void assert_contains(const char *text, const char *needle)
{
	if (text == NULL || strstr(text, needle) == NULL)
		fail_msg("'%s' does not contain '%s'", text ? text : "(null)", needle);
}

/* ---- PostgreSQL --------------------------------------------------------- */

static void postgres_with_fsync_off_warns(void **state)
{
	faucet_store *s = open_url(ts_env("FAUCET_TEST_PG_URL"));
	faucet_check_report *r = NULL;
	const faucet_probe *p = durability(s, &r);
	char *out;

	(void)state;
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_contains(p->reason, "fsync=off");
	assert_contains(p->hint, "fsync = on");
	/* The durable settings are not named. */
	assert_null(strstr(p->reason, "synchronous_commit"));
	faucet_check_report_free(r);
	faucet_store_free(s);

	/* The command shows the warning and still exits 0 (ts_sh checks). */
	out = ts_sh("\"$FAUCET_BIN\" doctor --state '%s' 2>&1", ts_env("FAUCET_TEST_PG_URL"));
	assert_contains(out, "WARN");
	assert_contains(out, "fsync=off");
	ts_assert_no_secret(out);
	free(out);
}

/* synchronous_commit is a session setting: a role's default or the URL's
 * `options` can turn it off on a server that is fine otherwise. */
static void postgres_without_synchronous_commit_warns(void **state)
{
	char url[1024];
	faucet_store *s;
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	(void)state;
	(void)snprintf(url, sizeof(url), "%s?options=-csynchronous_commit%%3Doff",
		       ts_env("FAUCET_TEST_PG_URL"));
	s = open_url(url);
	p = durability(s, &r);
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_contains(p->reason, "synchronous_commit=off");
	assert_contains(p->reason, "fsync=off");
	faucet_check_report_free(r);
	faucet_store_free(s);
}

/* ---- Redis -------------------------------------------------------------- */

/* redis-cli against the shared server (its reply, without the newline). */
static char *cli(const char *args)
{
	const char *url = ts_env("FAUCET_TEST_REDIS_URL");
	const char *slash = strrchr(url, '/');
	const char *colon = slash;

	while (colon > url && *colon != ':')
		colon--;
	return ts_sh("REDISCLI_AUTH='%s' redis-cli -h 127.0.0.1 -p %.*s %s 2>&1",
		     ts_env("FAUCET_TEST_PASSWORD"), (int)(slash - colon - 1), colon + 1, args);
}

static void cli_expect(const char *args, const char *reply)
{
	char *out = cli(args);

	if (strcmp(out, reply) != 0)
		fail_msg("redis-cli %s: %s", args, out);
	free(out);
}

static void redis_without_aof_warns(void **state)
{
	faucet_store *s = open_url(ts_env("FAUCET_TEST_REDIS_URL"));
	faucet_check_report *r = NULL;
	const faucet_probe *p = durability(s, &r);
	char *out;

	(void)state;
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_contains(p->reason, "appendonly no");
	assert_contains(p->hint, "appendfsync always");
	faucet_check_report_free(r);
	faucet_store_free(s);

	out = ts_sh("\"$FAUCET_BIN\" doctor --state '%s' 2>&1", ts_env("FAUCET_TEST_REDIS_URL"));
	assert_contains(out, "WARN");
	assert_contains(out, "appendonly no");
	ts_assert_no_secret(out);
	free(out);
}

static int restore_redis_config(void **state)
{
	(void)state;
	cli_expect("CONFIG SET appendfsync everysec", "OK");
	cli_expect("CONFIG SET appendonly no", "OK");
	return 0;
}

static void redis_with_fsync_always_passes(void **state)
{
	faucet_store *s;
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	(void)state;
	cli_expect("CONFIG SET appendonly yes", "OK");
	/* everysec is not enough: a second of acknowledged writes can go. */
	s = open_url(ts_env("FAUCET_TEST_REDIS_URL"));
	p = durability(s, &r);
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_contains(p->reason, "appendfsync everysec");
	assert_null(strstr(p->reason, "appendonly"));
	faucet_check_report_free(r);

	cli_expect("CONFIG SET appendfsync always", "OK");
	p = durability(s, &r);
	assert_int_equal(p->status, FAUCET_PROBE_PASS);
	assert_null(p->reason);
	faucet_check_report_free(r);
	faucet_store_free(s);
}

#define NOCONFIG_USER "faucet-noconfig"
#define NOCONFIG_PASSWORD "noconfig-pw"

static int drop_noconfig_user(void **state)
{
	char *out = cli("ACL DELUSER " NOCONFIG_USER);

	(void)state;
	free(out);
	return 0;
}

/* A user that may not run CONFIG (as on managed Redis services): the
 * settings cannot be checked, which is a skip that says so, not a pass. */
static void redis_without_config_access_skips(void **state)
{
	const char *base = ts_env("FAUCET_TEST_REDIS_URL");
	const char *at = strchr(base, '@');
	char url[512];
	faucet_store *s;
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	(void)state;
	assert_non_null(at);
	cli_expect("ACL SETUSER " NOCONFIG_USER " on '>" NOCONFIG_PASSWORD
		   "' '~*' '&*' +@all -config",
		   "OK");
	(void)snprintf(url, sizeof(url), "redis://" NOCONFIG_USER ":" NOCONFIG_PASSWORD "%s",
		       at);
	s = open_url(url);
	p = durability(s, &r);
	assert_int_equal(p->status, FAUCET_PROBE_SKIP);
	assert_contains(p->reason, "could not be checked");
	assert_contains(p->hint, "appendfsync always");
	assert_null(strstr(p->reason, NOCONFIG_PASSWORD));
	faucet_check_report_free(r);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(postgres_with_fsync_off_warns),
		cmocka_unit_test(postgres_without_synchronous_commit_warns),
		cmocka_unit_test(redis_without_aof_warns),
		cmocka_unit_test_teardown(redis_with_fsync_always_passes, restore_redis_config),
		cmocka_unit_test_teardown(redis_without_config_access_skips, drop_noconfig_user),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
