/*
 * test_run_status.c - how a run updates its status document: the end
 * starts from the document as the run's begin wrote it (no read, no parse
 * of up to 50 entries), and still merges what another writer changed in
 * between.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include <faucet/sys/store_backend.h>

/* A memory store that counts the reads of one key. */
typedef struct {
	faucet_store_backend b;
	faucet_store *inner;
	const char *watched;
	int reads;
} counting;

static int c_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	counting *c = (counting *)b;

	c->reads += strcmp(key, c->watched) == 0;
	return faucet_store_get(c->inner, key, out);
}

static int c_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(((counting *)b)->inner, key, v);
}

static int c_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(((counting *)b)->inner, key);
}

static int c_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(((counting *)b)->inner, prefix, out);
}

static int c_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		 const faucet_value *v, int *written)
{
	return faucet_store_compare_and_put(((counting *)b)->inner, key, expected, v, written);
}

static int c_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		 int *deleted)
{
	return faucet_store_compare_and_delete(((counting *)b)->inner, key, expected, deleted);
}

static void c_free(faucet_store_backend *b)
{
	faucet_store_free(((counting *)b)->inner);
	free(b);
}

static faucet_store *counting_store(counting **out)
{
	counting *c = calloc(1, sizeof(*c));
	faucet_store *s = NULL;

	assert_non_null(c);
	assert_int_equal(faucet_store_open_memory(&c->inner), 0);
	c->b.version = FAUCET_STORE_BACKEND_VERSION;
	c->b.name = "counting";
	c->b.get = c_get;
	c->b.put = c_put;
	c->b.del = c_del;
	c->b.list = c_list;
	c->b.compare_and_put = c_cas;
	c->b.compare_and_delete = c_cad;
	c->b.free = c_free;
	c->watched = "p::default::__status__";
	assert_int_equal(faucet_store_new(&s, &c->b), 0);
	*out = c;
	return s;
}

static faucet_run *begin_with(faucet_store *s, int no_lease)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;

	o.command = "test";
	o.no_lease = no_lease;
	if (faucet_run_begin(&r, s, "p", &o) != 0)
		fail_msg("begin: %s", faucet_error_last()->message);
	return r;
}

static faucet_run *begin(faucet_store *s)
{
	return begin_with(s, 0);
}

/* Fails before the status cache: the end read the document again. */
static void the_end_does_not_read_the_status_again(void **state)
{
	counting *c;
	faucet_store *s = counting_store(&c);
	faucet_run *r;

	(void)state;
	for (int i = 0; i < 3; i++) {
		r = begin(s);
		c->reads = 0;
		assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
		assert_int_equal(c->reads, 0);
		faucet_run_free(r);
	}
	faucet_store_free(s);
}

/* Fails before the end tried its own last write of the marker first: it
 * read the marker back (a hundred megabytes after a million-key import).
 * A run without a lease (the CLI's import): nobody else writes its marker.
 * (A leased run reads it: the children that joined it write it too.) */
static void the_end_does_not_read_the_marker_back(void **state)
{
	counting *c;
	faucet_store *s = counting_store(&c);
	faucet_value *v = NULL;
	char key[128];
	faucet_run *r;

	(void)state;
	r = begin_with(s, 1);
	snprintf(key, sizeof(key), "p::default::__rollback__::%s", faucet_run_id(r));
	c->watched = key;
	assert_int_equal(faucet_value_parse(&v, "1", 1), 0);
	assert_int_equal(faucet_run_put(r, "p::default", v), 0);
	c->reads = 0;
	assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	assert_int_equal(c->reads, 0);
	/* ... and the marker it wrote holds the after-image. */
	faucet_value_free(v);
	assert_int_equal(faucet_store_get(s, key, &v), 0);
	assert_non_null(v);
	assert_non_null(strstr(faucet_value_json(v), "\"after\":{\"p::default\":1}"));
	faucet_value_free(v);
	faucet_run_free(r);
	faucet_store_free(s);
}

/* Another writer changes the status while the run runs (here: the entry
 * of an earlier run marked undone): the end loses the race with its cached
 * document, re-reads, and keeps both changes. */
static void the_end_merges_a_status_changed_meanwhile(void **state)
{
	counting *c;
	faucet_store *s = counting_store(&c);
	faucet_run *first = begin(s), *second;
	faucet_value *cur = NULL, *edited = NULL;
	char *text, *at, id1[64];
	const char *json;

	(void)state;
	snprintf(id1, sizeof(id1), "%s", faucet_run_id(first));
	assert_int_equal(faucet_run_end(first, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(first);
	second = begin(s);

	assert_int_equal(faucet_store_get(s, "p::default::__status__", &cur), 0);
	text = strdup(faucet_value_json(cur));
	assert_non_null(text);
	/* The first run's entry: its outcome "ok" becomes "xx", a change only
	 * another writer could have made. */
	at = strstr(strstr(text, id1), "\"outcome\":\"ok\"");
	assert_non_null(at);
	memcpy(at, "\"outcome\":\"xx\"", 14);
	assert_int_equal(faucet_value_parse(&edited, text, strlen(text)), 0);
	assert_int_equal(faucet_store_put(s, "p::default::__status__", edited), 0);

	assert_int_equal(faucet_run_end(second, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_value_free(cur);
	assert_int_equal(faucet_store_get(s, "p::default::__status__", &cur), 0);
	json = faucet_value_json(cur);
	assert_non_null(strstr(json, "\"outcome\":\"xx\""));
	at = strstr(json, faucet_run_id(second));
	assert_non_null(at);
	assert_non_null(strstr(at, "\"outcome\":\"ok\""));
	faucet_run_free(second);
	faucet_value_free(cur);
	faucet_value_free(edited);
	free(text);
	faucet_store_free(s);
}

/* The status of p::default holding one unleased "running" run (a CLI
 * write) by `host`:`pid`, started `age` seconds ago; what every reader
 * shows its outcome as. */
static int unleased_run_shows_abandoned(const char *host, long pid, int64_t age)
{
	faucet_store *s = NULL;
	char when[32], doc[512], *json = NULL;
	int abandoned;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_utc_text((int64_t)time(NULL) - age, when, sizeof(when)), 0);
	snprintf(doc, sizeof(doc),
		 "{\"version\":1,\"runs\":[{\"run\":\"20260101T000000.000Z-abcdef\","
		 "\"started_at\":\"%s\",\"ended_at\":null,\"outcome\":\"running\","
		 "\"exit_status\":null,\"message\":null,\"keys\":[],\"undoes\":null,"
		 "\"by\":{\"host\":\"%s\",\"pid\":%ld,\"user\":\"u\",\"command\":\"put\"}}]}",
		 when, host, pid);
	tu_put(s, "p::default::__status__", doc);
	assert_int_equal(faucet_run_history_json(s, "p", "default", &json), 0);
	abandoned = strstr(json, "\"outcome\":\"abandoned\"") != NULL;
	assert_true(abandoned || strstr(json, "\"outcome\":\"running\"") != NULL);
	faucet_free(json);
	faucet_store_free(s);
	return abandoned;
}

static const char *this_host(void)
{
	static char host[256];

	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	return host;
}

/* Fails before unleased runs had an age bound: one of another host (whose
 * pid no reader can check) read "running" for ever, and so did one of
 * this host whose pid was reused by a live process. */
static void an_unleased_run_older_than_a_day_is_abandoned(void **state)
{
	(void)state;
	assert_false(unleased_run_shows_abandoned("elsewhere.invalid", 1, 3600));
	assert_true(unleased_run_shows_abandoned("elsewhere.invalid", 1, 25 * 3600));
	assert_false(unleased_run_shows_abandoned(this_host(), (long)getpid(), 3600));
	assert_true(unleased_run_shows_abandoned(this_host(), (long)getpid(), 25 * 3600));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_end_does_not_read_the_status_again),
		cmocka_unit_test(the_end_merges_a_status_changed_meanwhile),
		cmocka_unit_test(the_end_does_not_read_the_marker_back),
		cmocka_unit_test(an_unleased_run_older_than_a_day_is_abandoned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
