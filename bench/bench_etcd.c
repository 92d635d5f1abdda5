/*
 * bench_etcd.c - the etcd store beside a bare JSON-gateway round trip to
 * the same member, measured in the same run (bench/etcd.sh runs it).
 *
 *   bench_etcd URL [KEYS]      URL: etcd://H:P[,...]/PREFIX (the first
 *                              endpoint is the one both sides use)
 *
 * Point get vs a bare POST /v3/kv/range on a keep-alive curl handle, put
 * vs a bare /v3/kv/put, in alternating blocks, each reported as the median
 * ratio of the blocks; then a listing of KEYS keys (default 100,000),
 * loaded first with put_batch (put_many: txns of 128), beside two floors:
 * the same keys (keys only) in one bare reply of the JSON gateway and in
 * one bare gRPC KV/Range reply (HTTP/2, the transport the store lists
 * with), neither parsed.  The figures are printed; the targets (get, put
 * <= 1.2x; list of 100k <= 1.5 s) are in bench/README.md.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <faucet/faucet.h>
#include "bench.h"
#include "internal.h"
#include "stores/loaders.h"
#include "stores/etcd_grpc.h"

#define BLOCKS 9
#define PER_BLOCK 40

static size_t sink(char *d, size_t s, size_t n, void *ctx)
{
	(void)d;
	(void)ctx;
	return s * n;
}

static CURL *bare, *bare_grpc;
static char range_url[256], put_url[256], grpc_url[256];

static void bare_post(const char *url, const char *body)
{
	long status = 0;

	curl_easy_setopt(bare, CURLOPT_URL, url);
	curl_easy_setopt(bare, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(bare) != CURLE_OK ||
	    curl_easy_getinfo(bare, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200) {
		fprintf(stderr, "bench: bare request to %s failed\n", url);
		exit(1);
	}
}

/* One bare gRPC call on its keep-alive HTTP/2 handle: body is its frame. */
static void bare_grpc_post(const faucet_buf *body)
{
	long status = 0;

	curl_easy_setopt(bare_grpc, CURLOPT_URL, grpc_url);
	curl_easy_setopt(bare_grpc, CURLOPT_POSTFIELDS, body->ptr);
	curl_easy_setopt(bare_grpc, CURLOPT_POSTFIELDSIZE, (long)body->len);
	if (curl_easy_perform(bare_grpc) != CURLE_OK ||
	    curl_easy_getinfo(bare_grpc, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
	    status != 200) {
		fprintf(stderr, "bench: bare gRPC request to %s failed\n", grpc_url);
		exit(1);
	}
}

/* base64 of "PREFIX_bench/" + tail, in a static buffer of two. */
static const char *big_b64(const char *prefix, const char *tail)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static char out[2][256];
	static int which;
	char in[160];
	size_t n = (size_t)snprintf(in, sizeof(in), "%s_bench/%s", prefix, tail), w = 0;
	char *o = out[which++ & 1];

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)(unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)(unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		o[w++] = tab[(v >> 18) & 63];
		o[w++] = tab[(v >> 12) & 63];
		o[w++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		o[w++] = i + 2 < n ? tab[v & 63] : '=';
	}
	o[w] = '\0';
	return o;
}

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : getenv("FAUCET_TEST_ETCD_URL");
	size_t keys = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
	double get_r[BLOCKS], put_r[BLOCKS], get_us[BLOCKS], put_us[BLOCKS];
	double bare_get_us[BLOCKS], bare_put_us[BLOCKS];
	faucet_store *s = NULL;
	faucet_value *v = bench_json("{\"cursor\":\"2026-12-02T00:00:00Z\",\"n\":12345}");
	char host[128], prefix[128], body[512];
	const char *p;
	struct curl_slist *hdr = NULL, *ghdr = NULL;

	if (url == NULL || strncmp(url, "etcd://", 7) != 0) {
		fprintf(stderr, "usage: bench_etcd etcd://H:P[,...]/PREFIX [KEYS]\n");
		return 2;
	}
	p = url + 7;
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(p, ",/"), p);
	p = strchr(p, '/');
	snprintf(prefix, sizeof(prefix), "%s", p ? p + 1 : "bench");
	/* The store on the first endpoint only, so both sides talk to one member. */
	{
		char one[512];
		snprintf(one, sizeof(one), "etcd://%s/%s_bench", host, prefix);
		if (faucet_store_open_url(&s, one) != 0)
			bench_die("open");
	}
	if (faucet__curl_load() != 0 || (bare = curl_easy_init()) == NULL)
		bench_die("libcurl");
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(bare, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(bare, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(bare, CURLOPT_NOPROXY, "*");
	snprintf(range_url, sizeof(range_url), "http://%s/v3/kv/range", host);
	snprintf(put_url, sizeof(put_url), "http://%s/v3/kv/put", host);
	snprintf(grpc_url, sizeof(grpc_url), "http://%s/etcdserverpb.KV/Range", host);
	if ((bare_grpc = curl_easy_init()) == NULL)
		bench_die("libcurl");
	ghdr = curl_slist_append(NULL, "Content-Type: application/grpc");
	ghdr = curl_slist_append(ghdr, "TE: trailers");
	curl_easy_setopt(bare_grpc, CURLOPT_HTTPHEADER, ghdr);
	curl_easy_setopt(bare_grpc, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(bare_grpc, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(bare_grpc, CURLOPT_NOPROXY, "*");
	/* A connection per request, as the store has it with libcurl before
	 * 8.0.0 (which cannot reuse a prior-knowledge HTTP/2 connection). */
	curl_easy_setopt(bare_grpc, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(bare_grpc, CURLOPT_BUFFERSIZE, 512L * 1024); /* as the store's */
	if (faucet_store_put(s, "bench::point", v) != 0)
		bench_die("put");
	for (int b = 0; b < BLOCKS; b++) {
		double t0, t1, t2, t3, t4;
		faucet_value *got = NULL;

		/* The bare body carries the same key and value sizes (base64). */
		t0 = bench_now_s();
		for (int i = 0; i < PER_BLOCK; i++)
			bare_post(range_url, "{\"key\":\"YmVuY2hfYmFyZS9iZW5jaDo6cG9pbnQ=\"}");
		t1 = bench_now_s();
		for (int i = 0; i < PER_BLOCK; i++) {
			if (faucet_store_get(s, "bench::point", &got) != 0)
				bench_die("get");
			faucet_value_free(got);
		}
		t2 = bench_now_s();
		for (int i = 0; i < PER_BLOCK; i++)
			bare_post(put_url, "{\"key\":\"YmVuY2hfYmFyZS9iZW5jaDo6cG9pbnQ=\",\"value\":"
					   "\"eyJjdXJzb3IiOiIyMDI2LTEyLTAyVDAwOjAwOjAwWiIsIm4iOjEyMzQ1fQ==\"}");
		t3 = bench_now_s();
		for (int i = 0; i < PER_BLOCK; i++) {
			if (faucet_store_put(s, "bench::point", v) != 0)
				bench_die("put");
		}
		t4 = bench_now_s();
		bare_get_us[b] = (t1 - t0) / PER_BLOCK * 1e6;
		get_us[b] = (t2 - t1) / PER_BLOCK * 1e6;
		bare_put_us[b] = (t3 - t2) / PER_BLOCK * 1e6;
		put_us[b] = (t4 - t3) / PER_BLOCK * 1e6;
		get_r[b] = get_us[b] / bare_get_us[b];
		put_r[b] = put_us[b] / bare_put_us[b];
	}
	printf("etcd get        %8.1f us   bare range %8.1f us   ratio %.2fx (median of %d blocks)\n",
	       bench_median(get_us, BLOCKS), bench_median(bare_get_us, BLOCKS),
	       bench_median(get_r, BLOCKS), BLOCKS);
	printf("etcd put        %8.1f us   bare put   %8.1f us   ratio %.2fx (median of %d blocks)\n",
	       bench_median(put_us, BLOCKS), bench_median(bare_put_us, BLOCKS),
	       bench_median(put_r, BLOCKS), BLOCKS);
	fflush(stdout);

	/* A namespace of `keys` keys, loaded in txns of 128 (once: a second
	 * run finds it there). */
	{
		faucet_strarray got = {0};
		double t0, t1;

		if (faucet_store_list(s, "big::", &got) != 0)
			bench_die("list");
		if (got.count != keys) {
			faucet_entry *e = calloc(keys, sizeof(*e));
			char (*names)[32] = calloc(keys, 32);

			if (e == NULL || names == NULL)
				bench_die("calloc");
			for (size_t i = 0; i < keys; i++) {
				snprintf(names[i], 32, "big::k%07zu", i);
				e[i].key = names[i];
				e[i].value = v;
			}
			t0 = bench_now_s();
			/* Not all-or-nothing on etcd: put_many's txns of 128. */
			if (faucet_store_put_batch(s, e, keys) != 0)
				bench_die("put_batch");
			t1 = bench_now_s();
			printf("etcd load       %8.2f s    %zu keys in txns of 128 (%.0f keys/s)\n",
			       t1 - t0, keys, (double)keys / (t1 - t0));
			free(e);
			free(names);
		}
		faucet_strarray_dispose(&got);
		/* Beside each listing two floors: the same keys, keys only,
		 * in one reply that is not even parsed, from the gateway and
		 * from gRPC.  Blocks alternate; medians and the median ratios
		 * are printed. */
		{
			char bare_body[256], start[160], end[160];
			double list_s[3], bare_s[3], grpc_s[3], ratio[3], gratio[3];
			size_t listed = 0;
			faucet_buf grpc_body = FAUCET_BUF_INIT;
			etcd_grpc_range_req req = {start, 0, end, 0, (int64_t)keys, 0, 0, 1};

			snprintf(bare_body, sizeof(bare_body),
				 "{\"key\":\"%s\",\"range_end\":\"%s\",\"keys_only\":true,"
				 "\"limit\":\"%zu\"}",
				 big_b64(prefix, "big::"), big_b64(prefix, "big:;"), keys);
			req.key_len = (size_t)snprintf(start, sizeof(start), "%s_bench/big::", prefix);
			req.range_end_len = (size_t)snprintf(end, sizeof(end), "%s_bench/big:;", prefix);
			if (faucet__etcd_grpc_range_encode(&grpc_body, &req) != 0)
				bench_die("encode");
			for (int r = 0; r < 3; r++) {
				t0 = bench_now_s();
				if (faucet_store_list(s, "big::", &got) != 0)
					bench_die("list");
				t1 = bench_now_s();
				listed = got.count;
				faucet_strarray_dispose(&got);
				list_s[r] = t1 - t0;
				t0 = bench_now_s();
				bare_post(range_url, bare_body);
				t1 = bench_now_s();
				bare_s[r] = t1 - t0;
				ratio[r] = list_s[r] / bare_s[r];
				t0 = bench_now_s();
				bare_grpc_post(&grpc_body);
				t1 = bench_now_s();
				grpc_s[r] = t1 - t0;
				gratio[r] = list_s[r] / grpc_s[r];
			}
			faucet__buf_dispose(&grpc_body);
			printf("etcd list       %8.3f s    %zu keys (target <= 1.5 s for 100k; median of 3)\n",
			       bench_median(list_s, 3), listed);
			printf("bare grpc range %8.3f s    the same keys, keys only, one gRPC reply, "
			       "unparsed (the floor); ratio %.2fx\n",
			       bench_median(grpc_s, 3), bench_median(gratio, 3));
			printf("bare range      %8.3f s    the same keys by the JSON gateway "
			       "(the old transport's floor); ratio %.2fx\n",
			       bench_median(bare_s, 3), bench_median(ratio, 3));
		}
	}
	(void)body;
	curl_slist_free_all(hdr);
	curl_slist_free_all(ghdr);
	curl_easy_cleanup(bare);
	curl_easy_cleanup(bare_grpc);
	faucet_value_free(v);
	faucet_store_free(s);
	return 0;
}
