/*
 * test_file_temp_names.c - which names doctor --repair may remove from a
 * file store (faucet_file__is_temp_name): every temp name the store makes,
 * for values, sidecars and the encrypted store's marker, and nothing else.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "stores/file_internal.h"
#include "stores/file_names.h"

static void every_name_the_store_makes_is_recognised(void **state)
{
	const char *keys[] = {"p::a", "Orders::EU/2026", "x", "a.b-c_d"};
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP], longkey[257];
	(void)state;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		(void)faucet_file__stem(keys[i], stem);
		for (int n = 0; n < 12; n++) {
			assert_int_equal(faucet_file__temp_name(stem, "json", name, sizeof(name)), 0);
			assert_true(faucet_file__is_temp_name(name));
		}
	}
	/* A hashed stem: its value and its sidecar. */
	memset(longkey, 'k', 256);
	longkey[256] = '\0';
	memcpy(longkey, "p::", 3);
	assert_true(faucet_file__stem_is_hashed(stem, faucet_file__stem(longkey, stem)));
	assert_int_equal(faucet_file__temp_name(stem, "json", name, sizeof(name)), 0);
	assert_true(faucet_file__is_temp_name(name));
	assert_int_equal(faucet_file__temp_name(stem, "key", name, sizeof(name)), 0);
	assert_true(faucet_file__is_temp_name(name));
	assert_int_equal(faucet_file__temp_name(".faucet-encrypted", "marker", name, sizeof(name)), 0);
	assert_true(faucet_file__is_temp_name(name));
}

static void other_names_are_not(void **state)
{
	static const char *const names[] = {
		"foo.tmp",
		"x.json.tmp",
		"p%3A%3Aa.json",
		"p%3A%3Aa.json.lock",
		"p%3A%3Aa.0123456789abcdef0123456789abcdef.tmp",       /* the default namer's */
		"p%3A%3Aa.0123456789abcdef0123456789abcdef.7.txt.tmp", /* unknown kind */
		"p%3A%3Aa.0123456789ABCDEF0123456789abcdef.7.json.tmp", /* capitals */
		"p%3A%3Aa.0123456789abcdef0123456789abcde.7.json.tmp",  /* 31 digits */
		"p%3A%3Aa.0123456789abcdef0123456789abcdef.07.json.tmp",
		"p%3A%3Aa.0123456789abcdef0123456789abcdef.x.json.tmp",
		"p%3A%3Aa.0123456789abcdef0123456789abcdef..json.tmp",
		".0123456789abcdef0123456789abcdef.7.json.tmp",         /* no stem */
		".hidden.0123456789abcdef0123456789abcdef.7.json.tmp",
		"bad%.0123456789abcdef0123456789abcdef.7.json.tmp",     /* not a key's stem */
		"p%3A%3Aa.0123456789abcdef0123456789abcdef.7.key.tmp",  /* a sidecar of no hash */
		"abc~def.0123456789abcdef0123456789abcdef.7.json.tmp",  /* not a hash */
		".faucet-encrypted.0123456789abcdef0123456789abcdef.7.json.tmp",
		"p.0123456789abcdef0123456789abcdef.7.marker.tmp",
		"",
		".tmp",
	};
	(void)state;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (faucet_file__is_temp_name(names[i]))
			fail_msg("'%s' taken for a faucet temp name", names[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_name_the_store_makes_is_recognised),
		cmocka_unit_test(other_names_are_not),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
