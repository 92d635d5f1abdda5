/*
 * test_singer.c - Singer state capture (src/cli/singer.c): which lines are
 * state, that every other line passes through unchanged and in order, and
 * that how the output is cut into reads changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cli/singer.c"
#include "cli/util.c"

typedef struct {
	cli_buf out;
} sink;

static int to_sink(void *ctx, const char *data, size_t len)
{
	return cli_buf_put(&((sink *)ctx)->out, data, len) == 0 ? 0 : -1;
}

static const char input[] =
	"log line one\n"
	"  {\"pos\":1}\n"
	"a {brace} mid-line\n"
	"{\"type\":\"STATE\",\"value\":{\"pos\":2}}\r\n"
	"\t\n"
	"{\"type\":\"RECORD\",\"stream\":\"s\"}\n"
	"{broken\n"
	"{\"type\":\"STATE\",\"value\":5}\n"
	"[1,2]\n"
	"tail without newline";

static const char passed[] =
	"log line one\n"
	"a {brace} mid-line\n"
	"\t\n"
	"[1,2]\n"
	"tail without newline";

/* Feed `input` in pieces of `step` bytes and check the outcome. */
static void feed_in_steps(size_t step)
{
	singer s;
	sink k = {CLI_BUF_INIT};
	faucet_value *state;
	size_t len = strlen(input);

	singer_init(&s, to_sink, &k);
	for (size_t off = 0; off < len; off += step)
		assert_int_equal(singer_feed(&s, input + off, off + step > len ? len - off : step), 0);
	assert_int_equal(singer_finish(&s), 0);
	assert_non_null(k.out.ptr);
	assert_string_equal(k.out.ptr, passed);
	/* The RECORD line is a JSON object: by the rule, it is the newest state. */
	state = singer_take_state(&s);
	assert_non_null(state);
	assert_string_equal(faucet_value_json(state), "{\"type\":\"RECORD\",\"stream\":\"s\"}");
	assert_int_equal(s.states, 3);
	assert_int_equal(s.errors, 2);
	assert_non_null(strstr(s.error, "invalid state line"));
	faucet_value_free(state);
	cli_buf_dispose(&k.out);
	singer_dispose(&s);
}

static void whole_input_at_once(void **state)
{
	(void)state;
	feed_in_steps(sizeof(input));
}

static void one_byte_at_a_time(void **state)
{
	(void)state;
	feed_in_steps(1);
}

static void odd_chunks(void **state)
{
	(void)state;
	for (size_t step = 2; step < 40; step += 3)
		feed_in_steps(step);
}

static void the_state_message_value_is_stored_exactly(void **state)
{
	singer s;
	sink k = {CLI_BUF_INIT};
	faucet_value *v;
	const char *line = "{\"type\":\"STATE\",\"value\":{\"n\":18446744073709551615,\"x\":0.1}}\n";

	(void)state;
	singer_init(&s, to_sink, &k);
	assert_int_equal(singer_feed(&s, line, strlen(line)), 0);
	v = singer_take_state(&s);
	assert_string_equal(faucet_value_json(v), "{\"n\":18446744073709551615,\"x\":0.1}");
	assert_null(k.out.ptr);
	faucet_value_free(v);
	singer_dispose(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_input_at_once),
		cmocka_unit_test(one_byte_at_a_time),
		cmocka_unit_test(odd_chunks),
		cmocka_unit_test(the_state_message_value_is_stored_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
