/*
 * test_singer.c - Singer state capture (src/cli/singer.c): which lines are
 * state, that every other line passes through unchanged and in order, and
 * that how the output is cut into reads changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cli/util.c"
#include "cli/singer.c"

typedef struct {
	cli_buf out;
	int calls; /* emit calls: one per feed is the point of gathering spans */
} sink;

static int to_sink(void *ctx, const struct iovec *spans, int n)
{
	sink *k = ctx;

	k->calls++;
	assert_true(n >= 1 && n <= SINGER_SPANS);
	for (int i = 0; i < n; i++)
		if (cli_buf_put(&k->out, spans[i].iov_base, spans[i].iov_len) != 0)
			return -1;
	return 0;
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
	sink k = {CLI_BUF_INIT, 0};
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
	sink k = {CLI_BUF_INIT, 0};
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

/* Log lines read in blocks that cut lines anywhere: each feed ends in one
 * emit call (one writev), whatever pieces it was made of - the end of the
 * line the last block began, whole lines, the start of the next - and the
 * bytes come out unchanged and in order. */
static void one_emit_per_feed(void **state)
{
	singer s;
	sink k = {CLI_BUF_INIT, 0};
	cli_buf in = CLI_BUF_INIT;
	size_t feeds = 0;

	(void)state;
	for (int i = 0; i < 2000; i++)
		assert_int_equal(cli_buf_printf(&in, "INFO wrote record %d to table events\n", i), 0);
	singer_init(&s, to_sink, &k);
	for (size_t off = 0, step = 997; off < in.len; off += step, feeds++)
		assert_int_equal(singer_feed(&s, in.ptr + off, off + step > in.len ? in.len - off : step), 0);
	assert_int_equal(singer_finish(&s), 0);
	assert_true((size_t)k.calls <= feeds);
	assert_int_equal(k.out.len, in.len);
	assert_memory_equal(k.out.ptr, in.ptr, in.len);
	assert_null(singer_take_state(&s));
	cli_buf_dispose(&k.out);
	cli_buf_dispose(&in);
	singer_dispose(&s);
}

/* A state line cut by a read, then a log line finished from the carry in
 * the same feed: the carry's bytes are emitted before it is reused. */
static void carry_reused_within_a_feed(void **state)
{
	static const char a[] = "  x", b[] = "yz\n{\"p\":1}\n   ", c[] = "  q\n{\"p\":2}";
	singer s;
	sink k = {CLI_BUF_INIT, 0};
	faucet_value *v;

	(void)state;
	singer_init(&s, to_sink, &k);
	assert_int_equal(singer_feed(&s, a, strlen(a)), 0);
	assert_int_equal(singer_feed(&s, b, strlen(b)), 0);
	assert_int_equal(singer_feed(&s, c, strlen(c)), 0);
	assert_int_equal(singer_finish(&s), 0);
	assert_non_null(k.out.ptr);
	assert_string_equal(k.out.ptr, "  xyz\n     q\n");
	v = singer_take_state(&s);
	assert_string_equal(faucet_value_json(v), "{\"p\":2}");
	faucet_value_free(v);
	cli_buf_dispose(&k.out);
	singer_dispose(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_input_at_once),
		cmocka_unit_test(one_byte_at_a_time),
		cmocka_unit_test(odd_chunks),
		cmocka_unit_test(the_state_message_value_is_stored_exactly),
		cmocka_unit_test(one_emit_per_feed),
		cmocka_unit_test(carry_reused_within_a_feed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
