/*
 * test_etcd_grpc.c - the etcd store's protobuf codec of KV/Range
 * (src/stores/etcd_grpc.c): a RangeRequest is encoded to the exact bytes
 * protoc's would be, a RangeResponse is read field by field with unknown
 * fields skipped by wire type, and every malformed reply - a varint cut
 * short or longer than 64 bits, a length past its message, a nested
 * message overrunning its parent, a wrong wire type, a group, field 0, a
 * compressed or mis-sized frame - is refused, never half read.  The codec
 * against a real etcd is the contract suite's etcd row.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "stores/etcd_grpc.h"

/* ---- building replies ---------------------------------------------------- */

typedef struct {
	unsigned char b[4096];
	size_t n;
} msg;

static void raw(msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void varint(msg *m, uint64_t v)
{
	do {
		unsigned char byte = (unsigned char)(v & 0x7f);

		v >>= 7;
		if (v)
			byte |= 0x80;
		raw(m, &byte, 1);
	} while (v);
}

static void tag(msg *m, unsigned field, unsigned wire)
{
	varint(m, (uint64_t)field << 3 | wire);
}

static void int_field(msg *m, unsigned field, int64_t v)
{
	tag(m, field, 0);
	varint(m, (uint64_t)v);
}

static void bytes_field(msg *m, unsigned field, const void *p, size_t n)
{
	tag(m, field, 2);
	varint(m, n);
	raw(m, p, n);
}

static void str_field(msg *m, unsigned field, const char *s)
{
	bytes_field(m, field, s, strlen(s));
}

static void sub_field(msg *m, unsigned field, const msg *sub)
{
	bytes_field(m, field, sub->b, sub->n);
}

/* m in a gRPC frame. */
static void frame(msg *out, const msg *m)
{
	unsigned char head[5] = {0, (unsigned char)(m->n >> 24), (unsigned char)(m->n >> 16),
				 (unsigned char)(m->n >> 8), (unsigned char)m->n};

	out->n = 0;
	raw(out, head, sizeof(head));
	raw(out, m->b, m->n);
}

/* ---- decoding into a record ---------------------------------------------- */

typedef struct {
	char seen[1024]; /* "key=value@mod;" per entry, "-" for no value */
	int calls, fail_at;
	int64_t lease, create, version;
} record;

static int on_kv(const etcd_grpc_kv *kv, void *ctx)
{
	record *r = ctx;
	size_t n = strlen(r->seen);

	if (++r->calls == r->fail_at)
		return FAUCET_ENOMEM;
	(void)snprintf(r->seen + n, sizeof(r->seen) - n, "%.*s=%.*s@%lld;", (int)kv->key_len,
		       kv->key, kv->value ? (int)kv->value_len : 1, kv->value ? kv->value : "-",
		       (long long)kv->mod_revision);
	r->lease = kv->lease;
	r->create = kv->create_revision;
	r->version = kv->version;
	return 0;
}

static int decode(const msg *framed, record *r, etcd_grpc_range_meta *meta, const char **why)
{
	/* An exact-size heap copy, so ASan sees a read past the reply. */
	unsigned char *copy = malloc(framed->n ? framed->n : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, framed->b, framed->n);
	rc = faucet__etcd_grpc_range_decode(copy, framed->n, on_kv, r, meta, why);
	free(copy);
	return rc;
}

/* The reason a framed message is refused (fails when it is read). */
static const char *refused(const msg *m)
{
	msg f;
	record r = {0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;

	frame(&f, m);
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	assert_non_null(why);
	return why;
}

/* ---- tests --------------------------------------------------------------- */

static void a_range_request_is_encoded_as_protoc_would(void **state)
{
	static const unsigned char one_key[] = {0, 0, 0, 0, 3, 0x0a, 1, 'a'};
	static const unsigned char full[] = {0,    0,    0,    0,    18,   0x0a, 2,    'a',
					     'b',  0x12, 2,    'a',  'c',  0x18, 0x90, 0x4e,
					     0x20, 0xac, 0x02, 0x38, 1,    0x40, 1};
	etcd_grpc_range_req r = {"a", 1, NULL, 0, 0, 0, 0, 0};
	faucet_buf b = FAUCET_BUF_INIT;

	(void)state;
	assert_int_equal(faucet__etcd_grpc_range_encode(&b, &r), 0);
	assert_int_equal(b.len, sizeof(one_key));
	assert_memory_equal(b.ptr, one_key, sizeof(one_key));
	b.len = 0;
	r = (etcd_grpc_range_req){"ab", 2, "ac", 2, 10000, 300, 1, 1};
	assert_int_equal(faucet__etcd_grpc_range_encode(&b, &r), 0);
	assert_int_equal(b.len, sizeof(full));
	assert_memory_equal(b.ptr, full, sizeof(full));
	/* Bytes with NULs in them (a paging start is a key and its NUL). */
	b.len = 0;
	r = (etcd_grpc_range_req){"p/k\0", 4, "p0", 2, 5, 0, 0, 0};
	assert_int_equal(faucet__etcd_grpc_range_encode(&b, &r), 0);
	assert_int_equal(b.len, 5 + 6 + 4 + 2);
	assert_memory_equal(b.ptr + 5, "\x0a\x04p/k\0\x12\x02p0\x18\x05", 12);
	faucet__buf_dispose(&b);
}

static void a_range_response_is_read_with_unknown_fields_skipped(void **state)
{
	msg header = {0}, kv1 = {0}, kv2 = {0}, body = {0}, f;
	record r = {0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;

	(void)state;
	int_field(&header, 1, 14841639068965178418ull % INT64_MAX); /* cluster_id */
	int_field(&header, 2, 10276657743932975437ull % INT64_MAX); /* member_id */
	int_field(&header, 3, 1234);                                /* revision */
	int_field(&header, 4, 7);                                   /* raft_term */
	str_field(&kv1, 1, "p/a");
	int_field(&kv1, 2, 3);
	int_field(&kv1, 3, 1200);
	int_field(&kv1, 4, 2);
	str_field(&kv1, 5, "{\"x\":1}");
	/* Fields etcd does not send today, of every wire type read. */
	tag(&kv2, 9, 1);
	raw(&kv2, "12345678", 8);
	tag(&kv2, 10, 5);
	raw(&kv2, "1234", 4);
	str_field(&kv2, 11, "unknown");
	int_field(&kv2, 3, 1234);
	str_field(&kv2, 1, "p/b");
	int_field(&kv2, 6, -1); /* a lease of -1: ten bytes */
	int_field(&body, 4, 2);  /* count before the rest: order is free */
	sub_field(&body, 2, &kv1);
	sub_field(&body, 99, &header); /* an unknown message */
	sub_field(&body, 2, &kv2);
	sub_field(&body, 1, &header);
	int_field(&body, 3, 1);
	frame(&f, &body);
	assert_int_equal(decode(&f, &r, &meta, &why), 0);
	assert_string_equal(r.seen, "p/a={\"x\":1}@1200;p/b=-@1234;");
	assert_int_equal(r.lease, -1);
	assert_int_equal(meta.revision, 1234);
	assert_int_equal(meta.more, 1);
	assert_int_equal(meta.count, 2);
	assert_int_equal(meta.kvs, 2);
}

static void an_empty_range_and_empty_fields_are_read(void **state)
{
	msg empty = {0}, kv = {0}, body = {0}, f;
	record r = {0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;

	(void)state;
	frame(&f, &empty); /* no header, no kvs: everything zero */
	assert_int_equal(decode(&f, &r, &meta, &why), 0);
	assert_int_equal(meta.revision, 0);
	assert_int_equal(meta.kvs, 0);
	assert_int_equal(meta.more, 0);
	/* A KeyValue with nothing in it: the empty key, no value. */
	sub_field(&body, 2, &kv);
	frame(&f, &body);
	assert_int_equal(decode(&f, &r, &meta, &why), 0);
	assert_string_equal(r.seen, "=-@0;");
}

static void the_callbacks_error_stops_the_reading(void **state)
{
	msg kv = {0}, body = {0}, f;
	record r = {0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;

	(void)state;
	str_field(&kv, 1, "p/a");
	for (int i = 0; i < 3; i++)
		sub_field(&body, 2, &kv);
	frame(&f, &body);
	r.fail_at = 2;
	assert_int_equal(decode(&f, &r, &meta, &why), FAUCET_ENOMEM);
	assert_int_equal(r.calls, 2);
}

static void a_malformed_frame_is_refused(void **state)
{
	msg body = {0}, f;
	record r = {0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;

	(void)state;
	int_field(&body, 3, 1);
	frame(&f, &body);
	f.b[0] = 1;
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	assert_non_null(strstr(why, "compressed"));
	f.b[0] = 0;
	f.n--; /* one byte short of its length */
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	assert_non_null(strstr(why, "cut short"));
	f.n += 2; /* one byte after it */
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	assert_non_null(strstr(why, "after the frame"));
	f.n = 4;
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	f.n = 0;
	assert_int_equal(decode(&f, &r, &meta, &why), ETCD_GRPC_MALFORMED);
	assert_int_equal(r.calls, 0);
}

/* Malformed RangeResponses (framed correctly) and why each is refused. */
static const struct {
	const char *bytes;
	size_t len;
	const char *why;
} malformed[] = {
	/* A varint cut short: a tag, then a value. */
	{"\x80", 1, "cut short"},
	{"\x18\xff\xff", 3, "cut short"},
	/* Eleven bytes; ten whose last carries more than 64 bits. */
	{"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x01", 12, "longer than 10 bytes"},
	{"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11, "64 bits"},
	/* A length past the end; a huge one (it must not wrap a pointer). */
	{"\x12\x05p/a", 5, "past the end"},
	{"\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10, "past the end"},
	/* A KeyValue whose key overruns the KeyValue but not the reply (a
	 * field 9 "pad" follows): its own bounds hold.  A header likewise. */
	{"\x12\x03\x0a\x05p/a\x4a\x03pad", 10, "past the end"},
	{"\x0a\x02\x18\xff\x48\x01", 6, "cut short"},
	/* A fixed64 cut short; a group (wire type 3), wire type 6, field 0. */
	{"\x49\x01\x02", 3, "fixed-size"},
	{"\x4b\x4c", 2, "wire type"},
	{"\x4e", 1, "wire type"},
	{"\x00\x01", 2, "field number is 0"},
	/* Known fields of the wrong wire type: kvs as a varint, more as
	 * bytes, a key as a varint, a mod_revision as bytes. */
	{"\x10\x01", 2, "not length-delimited"},
	{"\x1a\x01x", 3, "not a varint"},
	{"\x12\x02\x08\x01", 4, "not length-delimited"},
	{"\x12\x03\x1a\x01x", 5, "not a varint"},
};

static void malformed_messages_are_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		msg m = {0};
		const char *why;

		raw(&m, malformed[i].bytes, malformed[i].len);
		why = refused(&m);
		if (strstr(why, malformed[i].why) == NULL)
			fail_msg("case %zu: refused for \"%s\", want \"%s\"", i, why,
				 malformed[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_range_request_is_encoded_as_protoc_would),
		cmocka_unit_test(a_range_response_is_read_with_unknown_fields_skipped),
		cmocka_unit_test(an_empty_range_and_empty_fields_are_read),
		cmocka_unit_test(the_callbacks_error_stops_the_reading),
		cmocka_unit_test(a_malformed_frame_is_refused),
		cmocka_unit_test(malformed_messages_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
