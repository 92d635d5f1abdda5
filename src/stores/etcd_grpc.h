/*
 * etcd_grpc.h - the protobuf wire codec of the one etcd gRPC call the etcd
 * store makes, etcdserverpb.KV/Range (internal to libfaucet; etcd_grpc.c
 * says why it is written by hand).
 *
 * Only the fields the store uses are encoded or decoded:
 *
 *   RangeRequest   key=1 bytes, range_end=2 bytes, limit=3 int64,
 *                  revision=4 int64, serializable=7 bool, keys_only=8 bool
 *   RangeResponse  header=1 ResponseHeader{revision=3 int64},
 *                  kvs=2 repeated KeyValue, more=3 bool, count=4 int64
 *   KeyValue       key=1 bytes, create_revision=2, mod_revision=3,
 *                  version=4 int64, value=5 bytes, lease=6 int64
 *
 * Every other field of a reply is skipped by its wire type.  A gRPC
 * message travels in a frame: one byte (1 = compressed), then its length
 * as 4 bytes big-endian.
 */
#ifndef FAUCET_STORES_ETCD_GRPC_H
#define FAUCET_STORES_ETCD_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Length of a gRPC frame's header. */
#define ETCD_GRPC_FRAME_HEAD 5

typedef struct {
	const char *key; /* the range's first key */
	size_t key_len;
	const char *range_end; /* the first key past it (NULL: key alone) */
	size_t range_end_len;
	int64_t limit;    /* 0: no limit */
	int64_t revision; /* 0: the newest */
	int serializable;
	int keys_only;
} etcd_grpc_range_req;

/* One KeyValue of a reply.  Its bytes point into the decoded buffer;
 * value is NULL when the entry has none (keys_only, or an empty value). */
typedef struct {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
	int64_t create_revision, mod_revision, version, lease;
} etcd_grpc_kv;

typedef struct {
	int64_t revision; /* header.revision (0: no header) */
	int more;
	int64_t count;
	size_t kvs; /* how many KeyValues were handed to the callback */
} etcd_grpc_range_meta;

/* Called for each KeyValue in reply order: 0, or a FAUCET_* error code
 * (negative), which stops the decoding and is returned as it is. */
typedef int (*etcd_grpc_kv_fn)(const etcd_grpc_kv *kv, void *ctx);

/* Append the gRPC frame of a RangeRequest to b: 0, or FAUCET_ENOMEM. */
int faucet__etcd_grpc_range_encode(faucet_buf *b, const etcd_grpc_range_req *r);

/* What faucet__etcd_grpc_range_decode returns for bytes that are not the
 * frame of a RangeResponse. */
#define ETCD_GRPC_MALFORMED 1

/* Decode the gRPC frame of a RangeResponse, exactly `len` bytes (one whole
 * frame, nothing after it).  0 with *meta filled; ETCD_GRPC_MALFORMED, *why
 * then saying what is wrong (a static string); or the error fn returned.
 * Allocates nothing and reads only data[0..len). */
int faucet__etcd_grpc_range_decode(const void *data, size_t len, etcd_grpc_kv_fn fn, void *ctx,
				   etcd_grpc_range_meta *meta, const char **why);

#endif
