/*
 * test_singer.c - Singer state capture (src/cli/singer.c): which lines are
 * state, that every other line passes through unchanged and in order, and
 * that how the output is cut into reads changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cli/singer.c"

typedef struct {
	faucet_buf out;
	int calls; /* emit calls: one per feed is the point of gathering spans */
	int spans; /* spans over all calls */
} sink;

static int to_sink(void *ctx, const struct iovec *spans, int n)
{
	sink *k = ctx;

	k->calls++;
	k->spans += n;
	assert_true(n >= 1 && n <= SINGER_SPANS);
	for (int i = 0; i < n; i++)
		if (faucet__buf_put(&k->out, spans[i].iov_base, spans[i].iov_len) != 0)
			return -1;
	return 0;
}

/* Every kind of line a tap or a target prints, with the odd ones. */
static const char input[] =
	"log line one\n"
	"  {\"pos\":1}\n"
	"a {brace} mid-line\n"
	"{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{\"type\":\"object\"},\"key_properties\":[\"id\"]}\n"
	"{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"id\":1,\"type\":\"STATE\"}}\n"
	"{\"type\":\"STATE\",\"value\":{\"pos\":2}}\r\n"
	"\t\n"
	"{\"type\": \"RECORD\", \"stream\": \"s\", \"record\": {\"id\": 2}}   \n"
	"{broken\n"
	"{\"stream\":\"s\",\"version\":3,\"type\":\"ACTIVATE_VERSION\"}\n"
	"{\"type\":\"BATCH\",\"stream\":\"s\",\"manifest\":[\"f\"]}\n"
	"{\"type\":\"SOMETHING_NEW\"}\n"
	"{\"t\\u0079pe\":\"RECORD\",\"stream\":\"s\"}\n"
	"{\"type\":5,\"pos\":9}\n"
	"{\"pos\":9} trailing words\n"
	"{\"pos\":[9}\n"
	"{\"type\":\"REC\\u004fRD\",\"stream\":\"s\"}\n"
	"{\"type\":\"ST\\u0041TE\",\"value\":{\"pos\":7}}\n"
	"{\"type\" : \"STATE\" , \"value\" : {\"pos\":8}}\n"
	"{\"a\":{\"type\":\"RECORD\"},\"pos\":3}\n"
	"[1,2]\n"
	"tail without newline";

static const char passed[] =
	"log line one\n"
	"a {brace} mid-line\n"
	"{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{\"type\":\"object\"},\"key_properties\":[\"id\"]}\n"
	"{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"id\":1,\"type\":\"STATE\"}}\n"
	"\t\n"
	"{\"type\": \"RECORD\", \"stream\": \"s\", \"record\": {\"id\": 2}}   \n"
	"{broken\n"
	"{\"stream\":\"s\",\"version\":3,\"type\":\"ACTIVATE_VERSION\"}\n"
	"{\"type\":\"BATCH\",\"stream\":\"s\",\"manifest\":[\"f\"]}\n"
	"{\"type\":\"SOMETHING_NEW\"}\n"
	"{\"t\\u0079pe\":\"RECORD\",\"stream\":\"s\"}\n"
	"{\"type\":5,\"pos\":9}\n"
	"{\"pos\":9} trailing words\n"
	"{\"pos\":[9}\n"
	"{\"type\":\"REC\\u004fRD\",\"stream\":\"s\"}\n"
	"[1,2]\n"
	"tail without newline";

/* Feed `input` in pieces of `step` bytes and check the outcome: only the
 * state lines - an object without "type", a STATE - are taken out, and the
 * newest is the state; Singer messages of every other type, and lines that
 * are not JSON objects, pass through byte for byte. */
static void feed_in_steps(size_t step)
{
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_value *state;
	size_t len = strlen(input);

	cli_singer_init(&s, to_sink, &k);
	for (size_t off = 0; off < len; off += step)
		assert_int_equal(cli_singer_feed(&s, input + off, off + step > len ? len - off : step), 0);
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_non_null(k.out.ptr);
	assert_string_equal(k.out.ptr, passed);
	state = cli_singer_take_state(&s);
	assert_non_null(state);
	assert_string_equal(faucet_value_json(state), "{\"a\":{\"type\":\"RECORD\"},\"pos\":3}");
	assert_int_equal(s.states, 5);
	assert_int_equal(s.errors, 0);
	assert_null(s.error);
	faucet_value_free(state);
	faucet__buf_dispose(&k.out);
	cli_singer_dispose(&s);
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
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_value *v;
	const char *line = "{\"type\":\"STATE\",\"value\":{\"n\":18446744073709551615,\"x\":0.1}}\n";

	(void)state;
	cli_singer_init(&s, to_sink, &k);
	assert_int_equal(cli_singer_feed(&s, line, strlen(line)), 0);
	v = cli_singer_take_state(&s);
	assert_string_equal(faucet_value_json(v), "{\"n\":18446744073709551615,\"x\":0.1}");
	assert_null(k.out.ptr);
	faucet_value_free(v);
	cli_singer_dispose(&s);
}

/* Log lines read in blocks that cut lines anywhere: each feed ends in one
 * emit call (one writev), whatever pieces it was made of - the end of the
 * line the last block began, whole lines, the start of the next - and the
 * bytes come out unchanged and in order. */
static void one_emit_per_feed(void **state)
{
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_buf in = FAUCET_BUF_INIT;
	size_t feeds = 0;

	(void)state;
	for (int i = 0; i < 2000; i++)
		assert_int_equal(faucet__buf_printf(&in, "INFO wrote record %d to table events\n", i), 0);
	cli_singer_init(&s, to_sink, &k);
	for (size_t off = 0, step = 997; off < in.len; off += step, feeds++)
		assert_int_equal(cli_singer_feed(&s, in.ptr + off, off + step > in.len ? in.len - off : step), 0);
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_true((size_t)k.calls <= feeds);
	assert_int_equal(k.out.len, in.len);
	assert_memory_equal(k.out.ptr, in.ptr, in.len);
	assert_null(cli_singer_take_state(&s));
	faucet__buf_dispose(&k.out);
	faucet__buf_dispose(&in);
	cli_singer_dispose(&s);
}

/* A state line cut by a read, then a log line finished from the carry in
 * the same feed: the carry's bytes are emitted before it is reused. */
static void carry_reused_within_a_feed(void **state)
{
	static const char a[] = "  x", b[] = "yz\n{\"p\":1}\n   ", c[] = "  q\n{\"p\":2}";
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_value *v;

	(void)state;
	cli_singer_init(&s, to_sink, &k);
	assert_int_equal(cli_singer_feed(&s, a, strlen(a)), 0);
	assert_int_equal(cli_singer_feed(&s, b, strlen(b)), 0);
	assert_int_equal(cli_singer_feed(&s, c, strlen(c)), 0);
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_non_null(k.out.ptr);
	assert_string_equal(k.out.ptr, "  xyz\n     q\n");
	v = cli_singer_take_state(&s);
	assert_string_equal(faucet_value_json(v), "{\"p\":2}");
	faucet_value_free(v);
	faucet__buf_dispose(&k.out);
	cli_singer_dispose(&s);
}

/* A STATE without a "value" object is an error, and from then on no state
 * is kept - not the one before it, not the ones after: the run fails and
 * stores nothing. */
static void a_state_without_a_value_object_keeps_nothing(void **state)
{
	static const char *const bad[] = {
		"{\"type\":\"STATE\"}\n",
		"{\"type\":\"STATE\",\"value\":5}\n",
		"{\"type\":\"STATE\",\"value\":null}\n",
		"{\"type\":\"STATE\",\"value\":{\"n\":1e999}}\n",
	};
	static const char *const why[] = {
		"without a \"value\"",
		"not a JSON object",
		"not a JSON object",
		"cannot be read",
	};

	(void)state;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(bad); i++) {
		singer s;
		sink k = {FAUCET_BUF_INIT, 0, 0};
		const char *before = "{\"type\":\"STATE\",\"value\":{\"p\":1}}\nlog\n";
		const char *after = "{\"type\":\"STATE\",\"value\":{\"p\":2}}\n{\"p\":3}\n";

		cli_singer_init(&s, to_sink, &k);
		assert_int_equal(cli_singer_feed(&s, before, strlen(before)), 0);
		assert_int_equal(cli_singer_feed(&s, bad[i], strlen(bad[i])), 0);
		assert_int_equal(cli_singer_feed(&s, after, strlen(after)), 0);
		assert_int_equal(cli_singer_finish(&s), 0);
		assert_int_equal(s.errors, 1);
		assert_non_null(s.error);
		if (strstr(s.error, why[i]) == NULL)
			fail_msg("'%s': the error '%s' should say '%s'", bad[i], s.error, why[i]);
		assert_null(cli_singer_take_state(&s));
		assert_string_equal(k.out.ptr, "log\n");
		faucet__buf_dispose(&k.out);
		cli_singer_dispose(&s);
	}
}

/* Long lines cut into many reads: a RECORD streams through and is never
 * held; a RECORD whose "type" comes last is held until that shows, then
 * passes whole; a long state line is held and taken. */
static void long_lines_across_reads(void **state)
{
	faucet_buf in = FAUCET_BUF_INIT, want = FAUCET_BUF_INIT, filler = FAUCET_BUF_INIT;
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_value *v;
	size_t step = 65536, held_max = 0;

	(void)state;
	for (int i = 0; i < 300000; i++)
		assert_int_equal(faucet__buf_puts(&filler, "0123456789"), 0);
	assert_int_equal(faucet__buf_printf(&in, "{\"type\":\"RECORD\",\"record\":{\"s\":\"%s\"}}\n", filler.ptr), 0);
	assert_int_equal(faucet__buf_put(&want, in.ptr, in.len), 0);
	assert_int_equal(faucet__buf_printf(&in, "{\"record\":{\"s\":\"%s\"},\"type\":\"RECORD\"}\n", filler.ptr), 0);
	assert_int_equal(faucet__buf_put(&want, in.ptr + want.len, in.len - want.len), 0);
	assert_int_equal(faucet__buf_printf(&in, "{\"pos\":\"%s\"}\nlast", filler.ptr), 0);
	assert_int_equal(faucet__buf_puts(&want, "last"), 0);

	cli_singer_init(&s, to_sink, &k);
	for (size_t off = 0; off < in.len; off += step) {
		assert_int_equal(cli_singer_feed(&s, in.ptr + off, off + step > in.len ? in.len - off : step), 0);
		/* The first line, a RECORD from its first bytes, is never held. */
		if (off + step < filler.len)
			held_max = s.carry.len > held_max ? s.carry.len : held_max;
	}
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_true(held_max < step);
	assert_int_equal(k.out.len, want.len);
	assert_memory_equal(k.out.ptr, want.ptr, want.len);
	v = cli_singer_take_state(&s);
	assert_non_null(v);
	assert_int_equal(faucet_value_len(v), filler.len + 10);
	assert_int_equal(s.errors, 0);
	faucet_value_free(v);
	faucet__buf_dispose(&k.out);
	faucet__buf_dispose(&in);
	faucet__buf_dispose(&want);
	faucet__buf_dispose(&filler);
	cli_singer_dispose(&s);
}

/* A line that may be state but grows past SINGER_LINE_MAX is not held: it
 * streams through whole, and since it ends as a state line, that is an
 * error (nothing stored).  The same length of RECORD just passes. */
static void a_state_line_too_long_to_hold_streams_and_fails(void **state)
{
	size_t big = SINGER_LINE_MAX + 1000, step = 1 << 20;
	char *line = malloc(big + 1);
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	const char *next = "{\"type\":\"STATE\",\"value\":{\"p\":1}}\nend\n";

	(void)state;
	assert_non_null(line);
	memset(line, 'x', big);
	memcpy(line, "{\"pos\":\"", 8);
	memcpy(line + big - 3, "\"}\n", 3);
	cli_singer_init(&s, to_sink, &k);
	for (size_t off = 0; off < big; off += step)
		assert_int_equal(cli_singer_feed(&s, line + off, off + step > big ? big - off : step), 0);
	assert_true(s.carry.cap <= SINGER_LINE_MAX + 1);
	assert_int_equal(cli_singer_feed(&s, next, strlen(next)), 0);
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_int_equal(k.out.len, big + 4);
	assert_memory_equal(k.out.ptr, line, big);
	assert_string_equal(k.out.ptr + big, "end\n");
	assert_int_equal(s.errors, 1);
	assert_non_null(strstr(s.error, "64 MiB"));
	assert_null(cli_singer_take_state(&s));
	cli_singer_dispose(&s);
	faucet__buf_dispose(&k.out);
	free(line);
}

/* RECORD lines read in blocks: one emit call per feed, adjacent lines in
 * one span (so one writev moves a whole read, not a piece per line), the
 * bytes unchanged. */
static void record_lines_go_out_in_one_span_per_feed(void **state)
{
	singer s;
	sink k = {FAUCET_BUF_INIT, 0, 0};
	faucet_buf in = FAUCET_BUF_INIT;
	size_t feeds = 0;

	(void)state;
	for (int i = 0; i < 20000; i++)
		assert_int_equal(faucet__buf_printf(&in, "{\"type\":\"RECORD\",\"stream\":\"events\","
						      "\"record\":{\"id\":%d,\"name\":\"n%d\"}}\n", i, i), 0);
	cli_singer_init(&s, to_sink, &k);
	for (size_t off = 0, step = 65536; off < in.len; off += step, feeds++)
		assert_int_equal(cli_singer_feed(&s, in.ptr + off, off + step > in.len ? in.len - off : step), 0);
	assert_int_equal(cli_singer_finish(&s), 0);
	assert_true((size_t)k.calls <= feeds);
	/* At most two per feed: the held start of a line the last feed cut
	 * before its "type", and the rest of the feed. */
	assert_true((size_t)k.spans <= 2 * feeds);
	assert_int_equal(k.out.len, in.len);
	assert_memory_equal(k.out.ptr, in.ptr, in.len);
	assert_null(cli_singer_take_state(&s));
	faucet__buf_dispose(&k.out);
	faucet__buf_dispose(&in);
	cli_singer_dispose(&s);
}

/* The rule as the strict parser reads it: 1 when `line` is state (an
 * object without "type", or one whose "type" is the string "STATE"), 0
 * when it passes through, -1 when it does not parse. */
static int reference(const char *line)
{
	faucet_value *v = NULL, *type = NULL;
	int r;

	if (faucet_value_parse(&v, line, strlen(line)) != 0)
		return -1;
	assert_int_equal(faucet_value_member(v, "type", &type), 0);
	if (faucet_value_json(v)[0] != '{')
		r = 0;
	else
		r = type == NULL || strcmp(faucet_value_json(type), "\"STATE\"") == 0;
	faucet_value_free(type);
	faucet_value_free(v);
	return r;
}

/* The tests' random numbers: a seeded linear congruential step, its high
 * 16 bits. */
static unsigned next_random(unsigned *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 16;
}

/* Random lines made of JSON pieces, each fed alone: the scan classifies
 * every line the parser can read as the parser does, and a line it cannot
 * read either passes through or - when it has an object's shape - is a bad
 * state line, never a state.  Fed whole or cut anywhere, the outcome is the
 * same. */
static void the_scan_agrees_with_the_parser(void **state)
{
	static const char *const pieces[] = {
		"{", "}", "[", "]", ":", ",", " ", "\"type\"", "\"STATE\"", "\"RECORD\"",
		"\"value\"", "{\"a\":1}", "1", "-2.5e3", "\"x\"", "true", "null", "\"t\\u0079pe\"",
		"\"ST\\u0041TE\"", "\"\\\\\"", "\"a\\\"b\"", "\t", "\"type\":", "\"type\": \"STATE\"",
		"\"value\":{}", "x", "\"", "\\",
	};
	unsigned seed = 12345;
	int agreed_state = 0, agreed_pass = 0;

	(void)state;
	for (int iter = 0; iter < 200000; iter++) {
		char line[512];
		size_t len = 0;
		int count, ref, got;
		singer s;
		sink k = {FAUCET_BUF_INIT, 0, 0};

		if (next_random(&seed) % 10 < 8)
			line[len++] = '{';
		count = (int)(next_random(&seed) % 12) + 1;
		for (int i = 0; i < count; i++) {
			const char *p;
			p = pieces[next_random(&seed) % FAUCET_ARRAY_LEN(pieces)];
			memcpy(line + len, p, strlen(p));
			len += strlen(p);
		}
		if (next_random(&seed) % 4 != 0)
			line[len++] = '}';
		line[len] = '\0';

		cli_singer_init(&s, to_sink, &k);
		assert_int_equal(cli_singer_feed(&s, line, len), 0);
		assert_int_equal(cli_singer_feed(&s, "\n", 1), 0);
		assert_int_equal(cli_singer_finish(&s), 0);
		got = k.out.len == len + 1 && memcmp(k.out.ptr, line, len) == 0 ? 0
		      : s.states + s.errors == 1 && k.out.len == 0 ? 1 : -2;
		ref = reference(line);
		if (got == -2 || (ref >= 0 && got != ref) || (ref < 0 && s.states != 0))
			fail_msg("'%s': the scan says %d (states %lu, errors %lu), the parser %d", line,
				 got, s.states, s.errors, ref);
		agreed_state += ref == 1;
		agreed_pass += ref == 0;
		faucet__buf_dispose(&k.out);
		cli_singer_dispose(&s);
	}
	/* The pieces do make both kinds of valid line. */
	assert_true(agreed_state > 100 && agreed_pass > 100);
}

/* Random documents of lines whose kind is known - log lines with and
 * without a '{', blank lines, records, state lines, STATE messages - cut
 * into random reads: exactly the non-state lines come out, in order, and
 * the newest state is kept.  Runs of lines without a '{' are passed as one
 * piece (feed's shortcut); a state line right after them must still be
 * seen. */
static void runs_of_plain_lines_pass_and_the_next_state_is_seen(void **state)
{
	static const struct {
		const char *line;
		int pos; /* the state it carries, or -1 when it passes */
	} pool[] = {
		{"INFO wrote 10 records\n", -1},
		{"\n", -1},
		{"   \t\n", -1},
		{"a {brace} mid-line\n", -1},
		{"{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"id\":1}}\n", -1},
		{"{\"pos\":1}\n", 1},
		{"  {\"pos\":2}\n", 2},
		{"{\"type\":\"STATE\",\"value\":{\"pos\":3}}\n", 3},
		{"\t{\"type\": \"STATE\", \"value\": {\"pos\": 4}}\n", 4},
	};
	unsigned seed = 777;

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		faucet_buf doc = FAUCET_BUF_INIT, want = FAUCET_BUF_INIT;
		sink k = {FAUCET_BUF_INIT, 0, 0};
		faucet_value *got;
		int last = -1, lines;
		singer s;

		lines = (int)(next_random(&seed) % 40) + 1;
		for (int i = 0; i < lines; i++) {
			unsigned r = next_random(&seed);
			/* Mostly plain lines, so long runs of them occur. */
			size_t which = r % 3 != 0 ? (r >> 2) % 4 : (r >> 2) % FAUCET_ARRAY_LEN(pool);
			assert_int_equal(faucet__buf_puts(&doc, pool[which].line), 0);
			if (pool[which].pos < 0)
				assert_int_equal(faucet__buf_puts(&want, pool[which].line), 0);
			else
				last = pool[which].pos;
		}
		cli_singer_init(&s, to_sink, &k);
		for (size_t at = 0; at < doc.len;) {
			unsigned r = next_random(&seed);
			size_t n = r % 3 == 0 ? doc.len - at : r % 64 + 1;
			if (n > doc.len - at)
				n = doc.len - at;
			assert_int_equal(cli_singer_feed(&s, doc.ptr + at, n), 0);
			at += n;
		}
		assert_int_equal(cli_singer_finish(&s), 0);
		if (k.out.len != want.len || (want.len > 0 && memcmp(k.out.ptr, want.ptr, want.len) != 0))
			fail_msg("iteration %d: the output is not the input's non-state lines", iter);
		got = cli_singer_take_state(&s);
		if (last < 0) {
			assert_null(got);
		} else {
			char text[32];
			snprintf(text, sizeof(text), "{\"pos\":%d}", last);
			assert_non_null(got);
			assert_string_equal(faucet_value_json(got), text);
		}
		faucet_value_free(got);
		faucet__buf_dispose(&k.out);
		faucet__buf_dispose(&doc);
		faucet__buf_dispose(&want);
		cli_singer_dispose(&s);
	}
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
		cmocka_unit_test(a_state_without_a_value_object_keeps_nothing),
		cmocka_unit_test(long_lines_across_reads),
		cmocka_unit_test(a_state_line_too_long_to_hold_streams_and_fails),
		cmocka_unit_test(record_lines_go_out_in_one_span_per_feed),
		cmocka_unit_test(the_scan_agrees_with_the_parser),
		cmocka_unit_test(runs_of_plain_lines_pass_and_the_next_state_is_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
