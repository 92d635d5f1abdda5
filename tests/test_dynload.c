/*
 * test_dynload.c - libraries loaded on first use (src/common/dynload.h):
 * nothing of libpq, hiredis, SQLite or libcurl is mapped until a store
 * that needs it is opened; a missing library or function is a clear
 * error naming what to install and changes nothing; loading is done once
 * however many threads ask.
 */
#include <dlfcn.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "dynload.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define HIREDIS_FILE "libhiredis.so." STR(HIREDIS_SONAME)

/* Whether the process has `soname` mapped (RTLD_NOLOAD loads nothing). */
static int is_mapped(const char *soname)
{
	void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);

	if (h == NULL)
		return 0;
	(void)dlclose(h); /* drops only the reference NOLOAD took */
	return 1;
}

/* Runs first: this program links libfaucet.a, whose PostgreSQL and Redis
 * code calls libpq and hiredis, yet neither is mapped until a store of its
 * type is opened (opening connects lazily, so no server is needed). */
static void client_libraries_load_when_their_store_opens(void **state)
{
	faucet_store *s = NULL;
	char *dir = tu_tempdir();

	(void)state;
	assert_false(is_mapped("libpq.so.5"));
	assert_false(is_mapped(HIREDIS_FILE));
	assert_int_equal(faucet_store_open_url(&s, "memory:"), 0);
	faucet_store_free(s);
	assert_int_equal(faucet_store_open_file(&s, dir, NULL), 0);
	tu_put(s, "p::k", "1");
	faucet_store_free(s);
	assert_false(is_mapped("libpq.so.5"));
	assert_false(is_mapped(HIREDIS_FILE));
	assert_false(is_mapped("libsqlite3.so.0"));
	assert_false(is_mapped("libcurl.so.4"));

	/* libcurl (the etcd store) first: libpq's dependencies do not include it. */
	assert_int_equal(faucet_store_open_url(&s, "etcd://127.0.0.1:1/none"), 0);
	faucet_store_free(s);
	assert_true(is_mapped("libcurl.so.4"));
	assert_false(is_mapped("libpq.so.5"));

	assert_int_equal(faucet_store_open_url(&s, "postgres://127.0.0.1:1/none"), 0);
	faucet_store_free(s);
	assert_true(is_mapped("libpq.so.5"));
	assert_false(is_mapped(HIREDIS_FILE));
	assert_int_equal(faucet_store_open_url(&s, "redis://127.0.0.1:1/0"), 0);
	faucet_store_free(s);
	assert_true(is_mapped(HIREDIS_FILE));
	assert_false(is_mapped("libsqlite3.so.0"));
	{
		char *db = tu_join(dir, "state.db"), *url = NULL;

		assert_non_null(url = faucet__sprintf("sqlite:%s", db));
		assert_int_equal(faucet_store_open_url(&s, url), 0);
		tu_put(s, "p::k", "{\"n\":3}");
		tu_assert_value(s, "p::k", "{\"n\":3}");
		faucet_store_free(s);
		assert_true(is_mapped("libsqlite3.so.0"));
		free(url);
		free(db);
	}
	tu_rmrf(dir);
	free(dir);
}

static double (*fn_cos)(double);
static double (*fn_sin)(double);
static void (*fn_missing)(void);

static void a_missing_library_names_the_package(void **state)
{
	static const faucet_dynsym syms[] = {{"cos", &fn_cos}};
	static faucet_dynlib lib =
		FAUCET_DYNLIB_INIT("the test store", "libfaucet-no-such-lib.so.7", "faucet-no-such-pkg", syms);
	const char *msg;

	(void)state;
	for (int attempt = 0; attempt < 2; attempt++) {
		/* Each call tries again, and each reports the reason. */
		assert_int_equal(faucet__dynlib_ensure(&lib), FAUCET_EUNSUPPORTED);
		msg = faucet_error_last()->message;
		assert_non_null(strstr(msg, "the test store needs libfaucet-no-such-lib.so.7"));
		assert_non_null(strstr(msg, "apt-get install faucet-no-such-pkg"));
		assert_null(fn_cos);
	}
}

static void a_missing_function_fills_no_slot(void **state)
{
	static const faucet_dynsym syms[] = {{"cos", &fn_cos}, {"faucet_no_such_function", &fn_missing}};
	static faucet_dynlib lib = FAUCET_DYNLIB_INIT("the test store", "libm.so.6", "libc6", syms);
	const char *msg;

	(void)state;
	assert_int_equal(faucet__dynlib_ensure(&lib), FAUCET_EUNSUPPORTED);
	msg = faucet_error_last()->message;
	assert_non_null(strstr(msg, "faucet_no_such_function()"));
	assert_non_null(strstr(msg, "libm.so.6"));
	/* cos was found, but the table is all or nothing. */
	assert_null(fn_cos);
	assert_null(fn_missing);
}

static faucet_dynlib libm_ok;

static void *load_from_thread(void *arg)
{
	(void)arg;
	return faucet__dynlib_ensure(&libm_ok) == 0 && fn_sin != NULL ? (void *)1 : NULL;
}

static void loads_once_for_many_threads(void **state)
{
	static const faucet_dynsym syms[] = {{"cos", &fn_cos}, {"sin", &fn_sin}};
	faucet_dynlib init = FAUCET_DYNLIB_INIT("the test store", "libm.so.6", "libc6", syms);
	pthread_t t[8];

	(void)state;
	memcpy(&libm_ok, &init, sizeof(init));
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_from_thread, NULL), 0);
	for (int i = 0; i < 8; i++) {
		void *ok = NULL;
		assert_int_equal(pthread_join(t[i], &ok), 0);
		assert_non_null(ok);
	}
	assert_true(fn_cos(0.0) == 1.0);
	assert_true(fn_sin(0.0) == 0.0);
	assert_int_equal(faucet__dynlib_ensure(&libm_ok), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(client_libraries_load_when_their_store_opens),
		cmocka_unit_test(a_missing_library_names_the_package),
		cmocka_unit_test(a_missing_function_fills_no_slot),
		cmocka_unit_test(loads_once_for_many_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
