/*
 * etcd_grpc.c - the protobuf wire codec of etcdserverpb.KV/Range
 * (etcd_grpc.h lists the fields).
 *
 * Why by hand: the store needs one request and one reply of etcd's API,
 * a dozen fields in all, and the wire format of those is small and exactly
 * specified (varints, length-delimited bytes and messages).  protobuf-c
 * would need code generated from etcd's .proto files compiled into
 * libfaucet, and a runtime library loaded or linked for every program that
 * opens any store; a gRPC library is far larger still.  This file has no
 * dependency at all, allocates nothing while decoding (the entries point
 * into the reply), and refuses anything it cannot read exactly: a varint
 * longer than 10 bytes or past 64 bits, a length past the end of the
 * buffer or of the enclosing message, a known field of the wrong wire
 * type, a group, field number 0, a compressed frame, bytes after the frame.
 * Unknown fields are skipped by their wire type, so a newer etcd adding
 * fields is read as before.
 */
#include <string.h>

#include "internal.h"
#include "stores/etcd_grpc.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_BYTES = 2, WT_FIXED32 = 5 };

/* ---- encoding ----------------------------------------------------------- */

static void put_varint(faucet_buf *b, uint64_t v)
{
	char tmp[10];
	size_t n = 0;

	do {
		unsigned char byte = (unsigned char)(v & 0x7f);

		v >>= 7;
		tmp[n++] = (char)(v ? byte | 0x80 : byte);
	} while (v);
	(void)faucet__buf_put(b, tmp, n);
}

static void put_tag(faucet_buf *b, unsigned field, unsigned wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

static void put_bytes(faucet_buf *b, unsigned field, const char *p, size_t len)
{
	put_tag(b, field, WT_BYTES);
	put_varint(b, len);
	(void)faucet__buf_put(b, p, len);
}

/* An int64 or bool field; proto3 leaves zero out. */
static void put_int(faucet_buf *b, unsigned field, int64_t v)
{
	if (v == 0)
		return;
	put_tag(b, field, WT_VARINT);
	put_varint(b, (uint64_t)v);
}

int faucet__etcd_grpc_range_encode(faucet_buf *b, const etcd_grpc_range_req *r)
{
	static const char head[ETCD_GRPC_FRAME_HEAD] = {0};
	size_t start = b->len, len;

	(void)faucet__buf_put(b, head, sizeof(head));
	if (r->key_len > 0)
		put_bytes(b, 1, r->key, r->key_len);
	if (r->range_end != NULL && r->range_end_len > 0)
		put_bytes(b, 2, r->range_end, r->range_end_len);
	put_int(b, 3, r->limit);
	put_int(b, 4, r->revision);
	put_int(b, 7, r->serializable != 0);
	put_int(b, 8, r->keys_only != 0);
	if (b->failed)
		return FAUCET_ENOMEM;
	len = b->len - start - ETCD_GRPC_FRAME_HEAD;
	if (len > UINT32_MAX)
		return FAUCET_ENOMEM; /* cannot be framed; never the case for a range */
	b->ptr[start + 1] = (char)(len >> 24 & 0xff);
	b->ptr[start + 2] = (char)(len >> 16 & 0xff);
	b->ptr[start + 3] = (char)(len >> 8 & 0xff);
	b->ptr[start + 4] = (char)(len & 0xff);
	return 0;
}

/* ---- decoding ----------------------------------------------------------- */

typedef struct {
	const unsigned char *p, *end;
	const char *why;
} pb;

static int bad(pb *d, const char *why)
{
	if (d->why == NULL)
		d->why = why;
	return -1;
}

static int get_varint(pb *d, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10; i++) {
		unsigned char byte;

		if (d->p == d->end)
			return bad(d, "a varint is cut short");
		byte = *d->p++;
		if (i == 9 && (byte & 0x7f) > 1)
			return bad(d, "a varint is longer than 64 bits");
		v |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return bad(d, "a varint is longer than 10 bytes");
}

/* A field's tag: *field and *wire. */
static int get_tag(pb *d, uint64_t *field, unsigned *wire)
{
	uint64_t tag;

	if (get_varint(d, &tag) != 0)
		return -1;
	*field = tag >> 3;
	*wire = (unsigned)(tag & 7);
	if (*field == 0)
		return bad(d, "a field number is 0");
	return 0;
}

/* A length-delimited field's bytes: [*p, *p + *len) lies within d. */
static int get_bytes(pb *d, const unsigned char **p, size_t *len)
{
	uint64_t n;

	if (get_varint(d, &n) != 0)
		return -1;
	if (n > (uint64_t)(d->end - d->p))
		return bad(d, "a length runs past the end of its message");
	*p = d->p;
	*len = (size_t)n;
	d->p += n;
	return 0;
}

static int skip(pb *d, unsigned wire)
{
	const unsigned char *p;
	size_t n;
	uint64_t v;

	switch (wire) {
	case WT_VARINT:
		return get_varint(d, &v);
	case WT_BYTES:
		return get_bytes(d, &p, &n);
	case WT_FIXED64:
	case WT_FIXED32:
		n = wire == WT_FIXED64 ? 8 : 4;
		if (n > (size_t)(d->end - d->p))
			return bad(d, "a fixed-size field runs past the end of its message");
		d->p += n;
		return 0;
	default:
		return bad(d, "a field has a wire type that is not read (a group, or 6, 7)");
	}
}

/* An int64 or bool field's value, checking its wire type. */
static int get_int(pb *d, unsigned wire, int64_t *out)
{
	uint64_t v;

	if (wire != WT_VARINT)
		return bad(d, "an integer field is not a varint");
	if (get_varint(d, &v) != 0)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* A bytes or message field's bytes, checking its wire type. */
static int get_len(pb *d, unsigned wire, const unsigned char **p, size_t *len)
{
	if (wire != WT_BYTES)
		return bad(d, "a bytes or message field is not length-delimited");
	return get_bytes(d, p, len);
}

static int header_decode(pb *d, etcd_grpc_range_meta *meta)
{
	while (d->p < d->end) {
		uint64_t field;
		unsigned wire;

		if (get_tag(d, &field, &wire) != 0)
			return -1;
		if (field == 3) {
			if (get_int(d, wire, &meta->revision) != 0)
				return -1;
		} else if (skip(d, wire) != 0) {
			return -1;
		}
	}
	return 0;
}

static int kv_decode(pb *d, etcd_grpc_kv *kv)
{
	const unsigned char *p;
	size_t n;

	memset(kv, 0, sizeof(*kv));
	while (d->p < d->end) {
		uint64_t field;
		unsigned wire;
		int rc;

		if (get_tag(d, &field, &wire) != 0)
			return -1;
		switch (field) {
		case 1:
		case 5:
			rc = get_len(d, wire, &p, &n);
			if (rc == 0 && field == 1) {
				kv->key = (const char *)p;
				kv->key_len = n;
			} else if (rc == 0) {
				kv->value = (const char *)p;
				kv->value_len = n;
			}
			break;
		case 2:
			rc = get_int(d, wire, &kv->create_revision);
			break;
		case 3:
			rc = get_int(d, wire, &kv->mod_revision);
			break;
		case 4:
			rc = get_int(d, wire, &kv->version);
			break;
		case 6:
			rc = get_int(d, wire, &kv->lease);
			break;
		default:
			rc = skip(d, wire);
			break;
		}
		if (rc != 0)
			return -1;
	}
	if (kv->key == NULL)
		kv->key = ""; /* proto3 leaves the empty key out */
	return 0;
}

int faucet__etcd_grpc_range_decode(const void *data, size_t len, etcd_grpc_kv_fn fn, void *ctx,
				   etcd_grpc_range_meta *meta, const char **why)
{
	const unsigned char *b = data;
	pb d;
	uint32_t mlen;

	memset(meta, 0, sizeof(*meta));
	*why = NULL;
	if (len < ETCD_GRPC_FRAME_HEAD) {
		*why = "the reply is shorter than a gRPC frame header";
		return ETCD_GRPC_MALFORMED;
	}
	if (b[0] != 0) {
		*why = b[0] == 1 ? "the reply is compressed" : "the frame's flag byte is not 0 or 1";
		return ETCD_GRPC_MALFORMED;
	}
	mlen = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if (mlen != len - ETCD_GRPC_FRAME_HEAD) {
		*why = mlen > len - ETCD_GRPC_FRAME_HEAD ? "the frame is cut short"
							 : "there are bytes after the frame";
		return ETCD_GRPC_MALFORMED;
	}
	d.p = b + ETCD_GRPC_FRAME_HEAD;
	d.end = b + len;
	d.why = NULL;
	while (d.p < d.end) {
		uint64_t field;
		unsigned wire;
		const unsigned char *p;
		size_t n;
		int64_t v;
		int rc;

		if (get_tag(&d, &field, &wire) != 0)
			goto fail;
		if (field == 1 || field == 2) {
			pb sub;

			if (get_len(&d, wire, &p, &n) != 0)
				goto fail;
			sub.p = p;
			sub.end = p + n;
			sub.why = NULL;
			if (field == 1) {
				rc = header_decode(&sub, meta);
			} else {
				etcd_grpc_kv kv;

				rc = kv_decode(&sub, &kv);
				if (rc == 0) {
					rc = fn(&kv, ctx);
					if (rc != 0)
						return rc;
					meta->kvs++;
				}
			}
			if (rc != 0) {
				(void)bad(&d, sub.why);
				goto fail;
			}
		} else if (field == 3 || field == 4) {
			if (get_int(&d, wire, &v) != 0)
				goto fail;
			if (field == 3)
				meta->more = v != 0;
			else
				meta->count = v;
		} else if (skip(&d, wire) != 0) {
			goto fail;
		}
	}
	return 0;
fail:
	*why = d.why;
	return ETCD_GRPC_MALFORMED;
}
