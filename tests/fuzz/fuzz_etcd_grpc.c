/*
 * fuzz_etcd_grpc.c - the etcd store's RangeResponse decoder
 * (src/stores/etcd_grpc.c) on arbitrary bytes: a reply comes from the
 * network, and the decoder hands out pointers into it.  The input is
 * decoded twice: as it is (a frame header and all), and wrapped in a
 * frame of the right length, so that most inputs reach the protobuf
 * reader.  Properties:
 *   - decoding never reads outside the input (the input is a heap block of
 *     its exact size, so ASan sees any overrun);
 *   - every KeyValue handed out lies inside the input;
 *   - a success counts exactly the KeyValues the callback saw; a refusal
 *     says why; a callback's error stops the decoding at once and is
 *     returned as it is;
 *   - the result does not depend on anything but the bytes (a second
 *     decoding gives the same).
 */
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "stores/etcd_grpc.h"

typedef struct {
	const char *lo, *hi;
	size_t calls, stop_at;
	uint64_t sum; /* of the entries' lengths and revisions */
} seen;

static void inside(const seen *s, const char *p, size_t n)
{
	FUZZ_CHECK(p != NULL && p >= s->lo && n <= (size_t)(s->hi - p),
		   "an entry's bytes lie outside the input");
}

static int on_kv(const etcd_grpc_kv *kv, void *ctx)
{
	seen *s = ctx;

	if (kv->key_len > 0)
		inside(s, kv->key, kv->key_len);
	if (kv->value != NULL)
		inside(s, kv->value, kv->value_len);
	s->sum += kv->key_len + kv->value_len + (uint64_t)kv->mod_revision +
		  (uint64_t)kv->create_revision + (uint64_t)kv->version + (uint64_t)kv->lease;
	if (++s->calls == s->stop_at)
		return FAUCET_ENOMEM;
	return 0;
}

static void check(const uint8_t *data, size_t size)
{
	seen a = {(const char *)data, (const char *)data + size, 0, 0, 0};
	seen b = a;
	etcd_grpc_range_meta meta, meta2;
	const char *why = NULL;
	int rc = faucet__etcd_grpc_range_decode(data, size, on_kv, &a, &meta, &why);

	FUZZ_CHECK(rc == 0 || rc == ETCD_GRPC_MALFORMED, "decode returned %d", rc);
	if (rc == 0)
		FUZZ_CHECK(meta.kvs == a.calls, "%zu entries counted, %zu seen", meta.kvs, a.calls);
	else
		FUZZ_CHECK(why != NULL && why[0] != '\0', "a refusal without a reason");
	if (a.calls == 0)
		return;
	/* Again, the callback failing at the last entry it saw. */
	b.stop_at = a.calls;
	rc = faucet__etcd_grpc_range_decode(data, size, on_kv, &b, &meta2, &why);
	FUZZ_CHECK(rc == FAUCET_ENOMEM && b.calls == a.calls,
		   "a callback's error at entry %zu gave %d after %zu entries", a.calls, rc, b.calls);
	FUZZ_CHECK(b.sum == a.sum, "the same bytes decoded twice differ");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *framed;

	check(data, size);
	if (size > UINT32_MAX - ETCD_GRPC_FRAME_HEAD)
		return 0;
	framed = malloc(size + ETCD_GRPC_FRAME_HEAD);
	if (framed == NULL)
		return 0;
	framed[0] = 0;
	framed[1] = (uint8_t)(size >> 24);
	framed[2] = (uint8_t)(size >> 16);
	framed[3] = (uint8_t)(size >> 8);
	framed[4] = (uint8_t)size;
	if (size > 0)
		memcpy(framed + ETCD_GRPC_FRAME_HEAD, data, size);
	check(framed, size + ETCD_GRPC_FRAME_HEAD);
	free(framed);
	return 0;
}
