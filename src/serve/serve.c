/*
 * serve.c - the `faucet serve` daemon (doc/design.md §9): options, the
 * token file, the limits, the access log, /metrics counters and the
 * graceful stop.  The routes are in api.c.
 *
 * GNU libmicrohttpd runs the HTTP side: a pool of threads with internal
 * polling, keep-alive, a connection timeout (a slow client cannot hold a
 * thread), and a connection limit.  MHD's own limit is set a little above
 * ours so that the connections beyond ours are still read and answered 503
 * (MHD would close them without a word).
 *
 * SIGTERM/SIGINT: the signals are blocked in every thread and the main
 * thread waits for them; then the daemon stops accepting (quiesce), the
 * requests in flight finish (bounded), and the process exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include "mhd.h"
#include "ssl.h"

#include "serve.h"

/* ---- tokens ------------------------------------------------------------ */

typedef struct {
	char *token;
	size_t len;
	int write;
} serve_token;

typedef struct {
	faucet_store *store;
	int read_only;
	serve_token *tokens;
	size_t ntokens;
	int have_tokens;
	unsigned max_connections;
	atomic_uint connections;
	atomic_uint inflight;
	const char *label;
	cli_context *ctx;
} serve_state;

static serve_state srv;

struct serve_request {
	struct MHD_Connection *conn;
	const serve_route *route;
	const char *method;
	char *url;            /* raw path (not decoded) */
	char *params[4][2];   /* name, decoded value */
	size_t nparams;
	faucet_strarray args; /* decoded query values kept for the request */
	char *body;
	size_t len, cap;
	int too_big;
	int refused;          /* answered before the body (413, 503) */
	uint64_t t0;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void wipe_tokens(void)
{
	for (size_t i = 0; i < srv.ntokens; i++) {
		explicit_bzero(srv.tokens[i].token, srv.tokens[i].len);
		free(srv.tokens[i].token);
	}
	free(srv.tokens);
	srv.tokens = NULL;
	srv.ntokens = 0;
}

static int is_scope(const char *word)
{
	return strcmp(word, "read") == 0 || strcmp(word, "write") == 0;
}

/* Read the token file: mode 0600 (no group/other bits), lines "T read" or
 * "T write" (or the older "read T").  Prints the error and returns
 * CLI_EXIT_USAGE when it is bad. */
static int load_tokens(const char *path)
{
	struct stat st;
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, lineno = 0, cap = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return cli_error(CLI_EXIT_USAGE, "serve: cannot open token file %s: %s", path,
				 strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		(void)close(fd);
		return cli_error(CLI_EXIT_USAGE, "serve: token file %s is not a regular file", path);
	}
	if ((st.st_mode & 077) != 0) {
		(void)close(fd);
		return cli_error(CLI_EXIT_USAGE,
				 "serve: token file %s has mode %04o: others can read it; it must be "
				 "0600 (chmod 600 %s)",
				 path, (unsigned)(st.st_mode & 07777), path);
	}
	(void)close(fd);
	if (cli_read_input(path, &text, &len) != 0)
		return cli_fail(CLI_EXIT_USAGE, "serve: reading token file %s", path);
	srv.have_tokens = 1;
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *scope, *tok, *rest, *s2 = NULL;
		serve_token *grown;
		size_t n = strlen(line);

		lineno++;
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\0' || *line == '#')
			continue;
		tok = strtok_r(line, " \t", &s2);
		scope = strtok_r(NULL, " \t", &s2);
		rest = strtok_r(NULL, " \t", &s2);
		/* "TOKEN SCOPE"; the older "SCOPE TOKEN" too: a token has at
		 * least 16 characters, so it is never a scope word. */
		if (tok != NULL && scope != NULL && !is_scope(scope) && is_scope(tok)) {
			char *t = tok;

			tok = scope;
			scope = t;
		}
		if (tok == NULL || scope == NULL || rest != NULL || !is_scope(scope)) {
			rc = cli_error(CLI_EXIT_USAGE,
				       "serve: token file %s line %zu: expected 'TOKEN read' or "
				       "'TOKEN write'",
				       path, lineno);
			break;
		}
		if (strlen(tok) < 16) {
			rc = cli_error(CLI_EXIT_USAGE,
				       "serve: token file %s line %zu: a token needs at least 16 "
				       "characters",
				       path, lineno);
			break;
		}
		grown = faucet__reserve(srv.tokens, &cap, srv.ntokens + 1, sizeof(*grown), 4);
		if (grown == NULL) {
			rc = cli_fail(CLI_EXIT_FAILED, "serve");
			break;
		}
		srv.tokens = grown;
		srv.tokens[srv.ntokens].len = strlen(tok);
		srv.tokens[srv.ntokens].write = strcmp(scope, "write") == 0;
		if ((srv.tokens[srv.ntokens].token = faucet__strdup(tok)) == NULL) {
			rc = cli_fail(CLI_EXIT_FAILED, "serve");
			break;
		}
		srv.ntokens++;
	}
	if (rc == 0 && srv.ntokens == 0)
		rc = cli_error(CLI_EXIT_USAGE, "serve: token file %s holds no token", path);
	explicit_bzero(text, len);
	free(text);
	return rc;
}

/* The scope of the presented token: -1 none matches, 0 read, 1 write.
 * Every token is compared over all its bytes (CRYPTO_memcmp), and every
 * token is looked at, so the time says nothing about which one nearly
 * matched. */
static int token_scope(const char *presented)
{
	size_t n = strlen(presented);
	int scope = -1;

	for (size_t i = 0; i < srv.ntokens; i++) {
		const serve_token *t = &srv.tokens[i];
		int same = 0;

		if (t->len == n)
			same = CRYPTO_memcmp(t->token, presented, n) == 0;
		if (same && t->write)
			scope = 1;
		else if (same && scope < 0)
			scope = 0;
	}
	return scope;
}

/* ---- metrics ----------------------------------------------------------- */

#define MAX_ROUTES 32
static const unsigned status_slots[] = {200, 201, 304, 400, 401, 403, 404, 405, 409,
					412, 413, 415, 500, 501, 503};
#define NSTATUS (sizeof(status_slots) / sizeof(status_slots[0]) + 1)
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				 0.05,   0.1,   0.25,   0.5,   1,    2.5, 5};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static atomic_ullong m_requests[MAX_ROUTES + 1][NSTATUS];
static atomic_ullong m_hist[NBUCKETS + 1];
static atomic_ullong m_sum_us, m_count, m_store_errors;

void serve_count_store_error(void)
{
	atomic_fetch_add(&m_store_errors, 1);
}

static void count_request(size_t route, unsigned status, uint64_t us)
{
	size_t slot = NSTATUS - 1;

	for (size_t i = 0; i < NSTATUS - 1; i++)
		if (status_slots[i] == status)
			slot = i;
	if (route > MAX_ROUTES)
		route = MAX_ROUTES;
	atomic_fetch_add(&m_requests[route][slot], 1);
	for (size_t i = 0; i < NBUCKETS; i++)
		if ((double)us / 1e6 <= buckets[i])
			atomic_fetch_add(&m_hist[i], 1);
	atomic_fetch_add(&m_hist[NBUCKETS], 1);
	atomic_fetch_add(&m_sum_us, us);
	atomic_fetch_add(&m_count, 1);
}

void serve_metrics_text(faucet_buf *b)
{
	size_t n;
	const serve_route *r = serve_routes(&n);

	(void)faucet__buf_puts(b, "# HELP faucet_serve_requests_total HTTP requests by route and status.\n"
			      "# TYPE faucet_serve_requests_total counter\n");
	for (size_t i = 0; i <= MAX_ROUTES && i <= n; i++) {
		for (size_t j = 0; j < NSTATUS; j++) {
			unsigned long long c = atomic_load(&m_requests[i][j]);
			char status[16];

			if (c == 0)
				continue;
			if (j < NSTATUS - 1)
				(void)snprintf(status, sizeof(status), "%u", status_slots[j]);
			else
				(void)snprintf(status, sizeof(status), "other");
			(void)faucet__buf_printf(b,
					     "faucet_serve_requests_total{method=\"%s\",route=\"%s\","
					     "status=\"%s\"} %llu\n",
					     i < n ? r[i].method : "", i < n ? r[i].path : "unmatched",
					     status, c);
		}
	}
	(void)faucet__buf_puts(b, "# HELP faucet_serve_request_duration_seconds Time to answer a request.\n"
			      "# TYPE faucet_serve_request_duration_seconds histogram\n");
	for (size_t i = 0; i < NBUCKETS; i++)
		(void)faucet__buf_printf(b, "faucet_serve_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
				     buckets[i], atomic_load(&m_hist[i]));
	(void)faucet__buf_printf(b, "faucet_serve_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
			     atomic_load(&m_hist[NBUCKETS]));
	(void)faucet__buf_printf(b, "faucet_serve_request_duration_seconds_sum %.6f\n",
			     (double)atomic_load(&m_sum_us) / 1e6);
	(void)faucet__buf_printf(b, "faucet_serve_request_duration_seconds_count %llu\n",
			     atomic_load(&m_count));
	(void)faucet__buf_printf(b,
			     "# HELP faucet_serve_store_errors_total Store operations that failed.\n"
			     "# TYPE faucet_serve_store_errors_total counter\n"
			     "faucet_serve_store_errors_total %llu\n",
			     atomic_load(&m_store_errors));
	(void)faucet__buf_printf(b,
			     "# HELP faucet_serve_connections Open connections.\n"
			     "# TYPE faucet_serve_connections gauge\n"
			     "faucet_serve_connections %u\n",
			     atomic_load(&srv.connections));
	serve_events_metrics(b);
}

/* ---- replies ------------------------------------------------------------ */

void serve_json(serve_reply *out, unsigned status, faucet_buf *b)
{
	if (b->failed || b->ptr == NULL) {
		faucet__buf_dispose(b);
		serve_error(out, 500, "out-of-memory", "out of memory");
		return;
	}
	free(out->body);
	out->status = status;
	out->len = b->len;
	out->body = faucet__buf_detach(b);
	out->type = "application/json";
}

void serve_error(serve_reply *out, unsigned status, const char *code, const char *fmt, ...)
{
	faucet_buf b = FAUCET_BUF_INIT, msg = FAUCET_BUF_INIT;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	cli_escape(&msg, text);
	(void)faucet__buf_puts(&b, "{\"error\":{");
	cli_jw_member(&b, "code", 1);
	faucet__json_string(&b, code);
	cli_jw_member(&b, "message", 0);
	faucet__json_string(&b, msg.ptr ? msg.ptr : text);
	(void)faucet__buf_puts(&b, "}}");
	faucet__buf_dispose(&msg);
	free(out->body);
	out->body = NULL;
	out->len = 0;
	out->status = status;
	out->type = "application/json";
	if (!b.failed && b.ptr != NULL) {
		out->len = b.len;
		out->body = faucet__buf_detach(&b);
	}
	faucet__buf_dispose(&b);
}

void serve_fail(serve_reply *out, const char *what)
{
	const faucet_error *e = faucet_error_last();
	unsigned status;

	switch (e->code) {
	case FAUCET_EINVALID: status = 400; break;
	case FAUCET_ENOTFOUND: status = 404; break;
	case FAUCET_EBUSY:
	case FAUCET_ECONTENTION:
	case FAUCET_ELEASELOST: status = 409; break;
	case FAUCET_EUNSUPPORTED: status = 501; break;
	case FAUCET_EUNAVAILABLE:
	case FAUCET_ETIMEOUT: status = 503; break;
	default: status = 500; break;
	}
	if (status >= 500 || e->code == FAUCET_EBUSY)
		serve_count_store_error();
	serve_error(out, status, faucet_error_name(e->code ? e->code : FAUCET_ERROR), "%s: %s",
		    what, e->message);
}

/* The canonical form the ETag hashes: objects' members sorted by name in
 * byte order, no white space, strings and numbers as json-c writes them
 * (numbers keep the text they were read with).  So a value whose members a
 * backend reorders (PostgreSQL's JSONB) keeps its ETag. */
static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int canon(EVP_MD_CTX *md, json_object *o, int depth)
{
	const char *t;

	if (depth > 1000)
		return -1;
	switch (json_object_get_type(o)) {
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(o), i = 0;
		const char **names = n ? calloc(n, sizeof(*names)) : NULL;
		int rc = 0;

		if (n && names == NULL)
			return -1;
		json_object_object_foreach(o, name, val) {
			(void)val;
			if (i < n)
				names[i++] = name;
		}
		if (i > 1)
			qsort(names, i, sizeof(*names), cmp_names);
		rc = EVP_DigestUpdate(md, "{", 1) == 1 ? 0 : -1;
		for (size_t j = 0; rc == 0 && j < i; j++) {
			json_object *jname = json_object_new_string(names[j]), *jval = NULL;

			if (jname == NULL) {
				rc = -1;
				break;
			}
			t = json_object_to_json_string_ext(jname, JSON_C_TO_STRING_PLAIN |
									 JSON_C_TO_STRING_NOSLASHESCAPE);
			if ((j && EVP_DigestUpdate(md, ",", 1) != 1) || EVP_DigestUpdate(md, t, strlen(t)) != 1 ||
			    EVP_DigestUpdate(md, ":", 1) != 1)
				rc = -1;
			json_object_put(jname);
			(void)json_object_object_get_ex(o, names[j], &jval);
			if (rc == 0)
				rc = canon(md, jval, depth + 1);
		}
		free(names);
		return rc == 0 && EVP_DigestUpdate(md, "}", 1) == 1 ? 0 : -1;
	}
	case json_type_array: {
		size_t n = json_object_array_length(o);

		if (EVP_DigestUpdate(md, "[", 1) != 1)
			return -1;
		for (size_t j = 0; j < n; j++) {
			if ((j && EVP_DigestUpdate(md, ",", 1) != 1) ||
			    canon(md, json_object_array_get_idx(o, j), depth + 1) != 0)
				return -1;
		}
		return EVP_DigestUpdate(md, "]", 1) == 1 ? 0 : -1;
	}
	default:
		t = o == NULL ? "null"
			      : json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
									  JSON_C_TO_STRING_NOSLASHESCAPE);
		return EVP_DigestUpdate(md, t, strlen(t)) == 1 ? 0 : -1;
	}
}

void serve_etag(const faucet_value *v, char out[80])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	size_t n = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const char *text = faucet_value_json(v);
	json_object *root = NULL;
	int ok = 0;

	out[0] = '\0';
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto done;
	/* A value that is not an object or array is its own canonical form. */
	if (strpbrk(text, "{[") == NULL || (text[0] == '"' && strchr(text + 1, '"')[1] == '\0'))
		ok = EVP_DigestUpdate(ctx, text, faucet_value_len(v)) == 1;
	else if ((root = json_tokener_parse(text)) != NULL)
		ok = canon(ctx, root, 0) == 0;
	if (!ok || EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
		goto done;
	out[n++] = '"';
	for (unsigned i = 0; i < mdlen && i < 32 && n + 3 < 80; i++) {
		static const char hex[] = "0123456789abcdef";

		out[n++] = hex[md[i] >> 4];
		out[n++] = hex[md[i] & 15];
	}
	out[n++] = '"';
	out[n] = '\0';
done:
	json_object_put(root);
	EVP_MD_CTX_free(ctx);
}

int serve_etag_matches(const char *header, const char *etag)
{
	const char *p = header;
	size_t n = strlen(etag);

	while (*p != '\0') {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (*p == '*')
			return etag[0] != '\0';
		if (strncmp(p, "W/", 2) == 0)
			p += 2; /* a weak tag never matches a strong comparison */
		else if (n > 0 && strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return 1;
		while (*p != '\0' && *p != ',')
			p++;
	}
	return 0;
}

/* ---- the request -------------------------------------------------------- */

cli_context *serve_context(void)
{
	return srv.ctx;
}

faucet_store *serve_store(serve_request *rq)
{
	(void)rq;
	return srv.store;
}

const char *serve_param(serve_request *rq, const char *name)
{
	for (size_t i = 0; i < rq->nparams; i++)
		if (strcmp(rq->params[i][0], name) == 0)
			return rq->params[i][1];
	return NULL;
}

/* Percent-decode n bytes of `s` (a "%00" or a bad escape: NULL). */
static char *decode(const char *s, size_t n)
{
	char *out = faucet__malloc(n + 1);
	size_t j = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n || (hi = faucet__hex_digit(s[i + 1])) < 0 || (lo = faucet__hex_digit(s[i + 2])) < 0 ||
			    (hi == 0 && lo == 0)) {
				free(out);
				return NULL;
			}
			out[j++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[j++] = s[i];
		}
	}
	out[j] = '\0';
	return out;
}

const char *serve_arg(serve_request *rq, const char *name)
{
	const char *raw = MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
	char *d;

	if (raw == NULL)
		return NULL;
	if ((d = decode(raw, strlen(raw))) == NULL)
		return NULL;
	if (faucet__strarray_append_owned(&rq->args, d) != 0)
		return NULL;
	return d;
}

int serve_bool_arg(serve_request *rq, serve_reply *out, const char *name, int *value)
{
	const char *v = serve_arg(rq, name);

	*value = 0;
	if (v == NULL || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		return 0;
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || *v == '\0') {
		*value = 1;
		return 0;
	}
	serve_error(out, 400, "invalid", "query argument %s: expected true or false, not '%s'", name,
		    v);
	return -1;
}

const char *serve_header(serve_request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *serve_method(serve_request *rq)
{
	return rq->method;
}

const char *serve_body(serve_request *rq, size_t *len)
{
	*len = rq->len;
	return rq->body ? rq->body : "";
}

static void request_free(serve_request *rq)
{
	if (rq == NULL)
		return;
	for (size_t i = 0; i < rq->nparams; i++) {
		free(rq->params[i][0]);
		free(rq->params[i][1]);
	}
	faucet_strarray_dispose(&rq->args);
	free(rq->body);
	free(rq->url);
	free(rq);
}

/* Match the raw path against a template; captures go into rq->params.  The
 * last capture {key} takes the rest of the path (a key's "/" may come
 * encoded or not).  1 on a match, 0 not, -1 a capture that does not decode. */
static int match(serve_request *rq, const char *tmpl, const char *path)
{
	const char *t = tmpl, *p = path;

	for (size_t i = 0; i < rq->nparams; i++) {
		free(rq->params[i][0]);
		free(rq->params[i][1]);
	}
	rq->nparams = 0;
	while (*t != '\0') {
		if (*t == '{') {
			const char *close = strchr(t, '}');
			const char *end;
			size_t nlen = (size_t)(close - t - 1);
			int rest = strncmp(t + 1, "key", nlen) == 0 && close[1] == '\0';

			end = rest ? p + strlen(p) : p + strcspn(p, "/");
			if (end == p || rq->nparams >= 4)
				return 0;
			rq->params[rq->nparams][0] = faucet__strndup(t + 1, nlen);
			rq->params[rq->nparams][1] = decode(p, (size_t)(end - p));
			rq->nparams++;
			if (rq->params[rq->nparams - 1][0] == NULL || rq->params[rq->nparams - 1][1] == NULL)
				return -1;
			t = close + 1;
			p = end;
			continue;
		}
		if (*t != *p)
			return 0;
		t++;
		p++;
	}
	return *p == '\0';
}

/* ---- the handler ------------------------------------------------------- */

static void access_log(const serve_request *rq, unsigned status, size_t bytes, uint64_t us)
{
	faucet_buf b = FAUCET_BUF_INIT;

	/* The path as sent, escaped: never a query string (a token there is
	 * refused, and not logged either). */
	cli_escape(&b, rq->url ? rq->url : "?");
	fprintf(stderr, "faucet serve: %s %s %u %zu %.3fms\n", rq->method, b.ptr ? b.ptr : "?", status,
		bytes, (double)us / 1000.0);
	faucet__buf_dispose(&b);
}

static enum MHD_Result send_reply(serve_request *rq, size_t route, serve_reply *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	uint64_t us;
	size_t len = r->len;

	if (r->stream_events)
		resp = serve_events_response(rq->conn);
	else
		resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"",
						       r->body ? MHD_RESPMEM_MUST_FREE
							       : MHD_RESPMEM_PERSISTENT);
	if (resp == NULL) {
		free(r->body);
		return MHD_NO;
	}
	r->body = NULL;
	(void)MHD_add_response_header(resp, "Content-Type",
				      r->stream_events ? "text/event-stream"
				      : r->type        ? r->type
						       : "application/json");
	(void)MHD_add_response_header(resp, "Cache-Control", "no-store");
	(void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->etag[0] != '\0')
		(void)MHD_add_response_header(resp, "ETag", r->etag);
	if (r->run[0] != '\0')
		(void)MHD_add_response_header(resp, "Faucet-Run", r->run);
	if (r->allow != NULL)
		(void)MHD_add_response_header(resp, "Allow", r->allow);
	if (r->www_auth)
		(void)MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"faucet\"");
	if (r->csp != NULL) {
		(void)MHD_add_response_header(resp, "Content-Security-Policy", r->csp);
		(void)MHD_add_response_header(resp, "X-Frame-Options", "DENY");
		(void)MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	}
	ret = MHD_queue_response(rq->conn, r->status, resp);
	MHD_destroy_response(resp);
	us = now_us() - rq->t0;
	count_request(route, r->status, us);
	access_log(rq, r->status, len, us);
	return ret;
}

/* Whether the Origin header names the host the request was sent to. */
static int same_origin(serve_request *rq, const char *origin)
{
	const char *host = serve_header(rq, "Host");
	const char *p = strstr(origin, "://");

	if (host == NULL || p == NULL)
		return 0;
	return strcmp(p + 3, host) == 0;
}

static int type_is(const char *header, const char *want)
{
	size_t n = strlen(want);

	if (header == NULL)
		return 0;
	while (*header == ' ')
		header++;
	return strncasecmp(header, want, n) == 0 &&
	       (header[n] == '\0' || header[n] == ';' || header[n] == ' ');
}

/* The route of the request's method and path: its index, else MAX_ROUTES
 * with the answer (400, 404 or 405) in *r; a 405's Allow header is the
 * text in allow[size], so the caller keeps it until the reply is sent. */
static size_t find_route(serve_request *rq, const serve_route *routes, size_t n, serve_reply *r,
			 char *allow, size_t size)
{
	size_t path_matches = 0;

	for (size_t i = 0; i < n; i++) {
		int m = match(rq, routes[i].path, rq->url);

		if (m < 0) {
			serve_error(r, 400, "invalid", "the path %s does not decode", rq->url);
			return MAX_ROUTES;
		}
		if (m == 0)
			continue;
		path_matches++;
		if (strcmp(routes[i].method, rq->method) == 0)
			return i;
		if (strlen(allow) + strlen(routes[i].method) + 3 < size) {
			if (allow[0] != '\0')
				strcat(allow, ", ");
			strcat(allow, routes[i].method);
		}
	}
	if (path_matches > 0) {
		serve_error(r, 405, "invalid", "%s is not allowed on %s (allowed: %s)", rq->method,
			    rq->url, allow);
		r->allow = allow;
	} else {
		serve_error(r, 404, "not-found", "no route %s %s", rq->method, rq->url);
	}
	return MAX_ROUTES;
}

/* With --token-file, every route but /v1/health takes a token, and a
 * write a write token: 1 with the 401 or 403 in *r when it has none. */
static int auth_refused(serve_request *rq, const serve_route *route, serve_reply *r)
{
	const char *auth;
	int scope = -1;

	if (!srv.have_tokens || strcmp(route->path, "/v1/health") == 0)
		return 0;
	auth = serve_header(rq, "Authorization");
	if (auth != NULL && strncasecmp(auth, "Bearer ", 7) == 0)
		scope = token_scope(auth + 7);
	if (scope < 0) {
		serve_error(r, 401, "auth",
			    auth == NULL ? "this server needs 'Authorization: Bearer TOKEN'"
					 : "the token is not valid");
		r->www_auth = 1;
		return 1;
	}
	if (route->write && scope < 1) {
		serve_error(r, 403, "auth", "the token may only read");
		return 1;
	}
	return 0;
}

/* A write route: 1 with the refusal in *r on a --read-only server, from
 * another site's page, or with a body of the wrong Content-Type. */
static int write_refused(serve_request *rq, const serve_route *route, serve_reply *r)
{
	const char *type = serve_header(rq, "Content-Type"), *origin;

	if (srv.read_only) {
		serve_error(r, 403, "read-only", "the server is read-only (--read-only)");
		return 1;
	}
	origin = serve_header(rq, "Origin");
	if (origin != NULL && !same_origin(rq, origin)) {
		serve_error(r, 403, "forbidden", "a write from another site (Origin %s) is refused",
			    origin);
		return 1;
	}
	if (route->body_type != NULL && !type_is(type, route->body_type)) {
		serve_error(r, 415, "invalid", "%s %s takes Content-Type: %s", rq->method, route->path,
			    route->body_type);
		return 1;
	}
	return 0;
}

/* Whether the request is refused before its route runs (the answer then
 * in *r): a body too big, a token in the URL, no token, a write refused. */
static int request_refused(serve_request *rq, const serve_route *route, serve_reply *r)
{
	if (rq->too_big) {
		serve_error(r, 413, "invalid", "the request body is over %u bytes", SERVE_BODY_MAX);
		return 1;
	}
	/* A token belongs in the Authorization header: one in the URL lands
	 * in proxies' and browsers' logs. */
	if (MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "access_token") != NULL ||
	    MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "token") != NULL) {
		serve_error(r, 400, "invalid",
			    "a token in the query string is refused: send it as 'Authorization: "
			    "Bearer TOKEN'");
		return 1;
	}
	return auth_refused(rq, route, r) || (route->write && write_refused(rq, route, r));
}

/* Decide and answer a complete request. */
static enum MHD_Result dispatch(serve_request *rq)
{
	serve_reply r;
	size_t n, route;
	const serve_route *routes = serve_routes(&n);
	char allow[128] = "";

	memset(&r, 0, sizeof(r));
	/* The dashboard's static files: no data in them, so no token needed
	 * (the page asks for one when the API answers 401). */
	if (serve_dashboard(rq->method, rq->url, &r))
		return send_reply(rq, MAX_ROUTES, &r);
	route = find_route(rq, routes, n, &r, allow, sizeof(allow));
	if (route == MAX_ROUTES)
		return send_reply(rq, route, &r);
	/* match again: the search left the captures of the last route it tried */
	(void)match(rq, routes[route].path, rq->url);
	rq->route = &routes[route];
	if (request_refused(rq, &routes[route], &r))
		return send_reply(rq, route, &r);
	faucet_error_clear();
	routes[route].fn(rq, &r);
	if (r.status == 0)
		serve_error(&r, 500, "state", "the route gave no answer");
	return send_reply(rq, route, &r);
}

static enum MHD_Result refuse_early(serve_request *rq, unsigned status, const char *code,
				    const char *msg)
{
	serve_reply r;

	memset(&r, 0, sizeof(r));
	rq->refused = 1;
	serve_error(&r, status, code, "%s", msg);
	return send_reply(rq, MAX_ROUTES, &r);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	serve_request *rq = *con_cls;

	(void)cls;
	(void)version;
	if (rq == NULL) {
		const char *cl;

		rq = faucet__calloc(1, sizeof(*rq));
		if (rq == NULL)
			return MHD_NO;
		rq->t0 = now_us();
		rq->conn = conn;
		rq->method = method;
		rq->url = faucet__strdup(url);
		*con_cls = rq;
		atomic_fetch_add(&srv.inflight, 1);
		if (rq->url == NULL)
			return MHD_NO;
		if (atomic_load(&srv.connections) > srv.max_connections)
			return refuse_early(rq, 503, "unavailable",
					    "too many connections; try again later");
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (cl != NULL && strtoull(cl, NULL, 10) > SERVE_BODY_MAX)
			return refuse_early(rq, 413, "invalid", "the request body is over 67108864 bytes");
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rq->refused || rq->too_big)
			return MHD_YES;
		if (rq->len + n > SERVE_BODY_MAX) {
			rq->too_big = 1;
			free(rq->body);
			rq->body = NULL;
			rq->len = rq->cap = 0;
			return MHD_YES;
		}
		if (rq->len + n + 1 > rq->cap) {
			size_t cap = rq->cap ? rq->cap : 4096;
			char *grown;

			while (cap < rq->len + n + 1)
				cap *= 2;
			if ((grown = realloc(rq->body, cap)) == NULL)
				return MHD_NO;
			rq->body = grown;
			rq->cap = cap;
		}
		memcpy(rq->body + rq->len, upload_data, n);
		rq->len += n;
		rq->body[rq->len] = '\0';
		return MHD_YES;
	}
	if (rq->refused)
		return MHD_YES;
	return dispatch(rq);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	if (*con_cls != NULL) {
		request_free(*con_cls);
		*con_cls = NULL;
		atomic_fetch_sub(&srv.inflight, 1);
	}
}

static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			      enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	(void)conn;
	(void)socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add(&srv.connections, 1);
	else
		atomic_fetch_sub(&srv.connections, 1);
}

/* MHD decodes paths itself by default; the routes decode each capture
 * (so a key's %2F stays inside its segment), and the query values are
 * decoded by serve_arg. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char text[512];

	(void)cls;
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	text[strcspn(text, "\n")] = '\0';
	fprintf(stderr, "faucet serve: %s\n", text);
}

/* ---- start-up ----------------------------------------------------------- */

/* Parse HOST:PORT ("[::1]:8421" for IPv6) into `addr`. */
static int parse_listen(const char *text, struct sockaddr_storage *addr, socklen_t *alen,
			int *loopback)
{
	char host[256];
	const char *colon, *port;
	struct addrinfo hints, *res = NULL;
	char *end;
	unsigned long pn;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (close == NULL || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
			return -1;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port = close + 2;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || (size_t)(colon - text) >= sizeof(host) || colon == text)
			return -1;
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = '\0';
		port = colon + 1;
	}
	errno = 0;
	pn = strtoul(port, &end, 10);
	if (*port == '\0' || *end != '\0' || pn > 65535 || errno != 0)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
		return -1;
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*alen = res->ai_addrlen;
	freeaddrinfo(res);
	if (addr->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else if (addr->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;

		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	} else {
		return -1;
	}
	return 0;
}

static int read_pem(const char *path, const char *what, char **out)
{
	size_t len;

	if (cli_read_input(path, out, &len) != 0)
		return cli_fail(CLI_EXIT_USAGE, "serve: reading the %s %s", what, path);
	return 0;
}

/* A passphrase callback that has none: an encrypted key is refused instead
 * of prompting on the terminal of a daemon. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* The certificate, the key and that they are a pair, checked before the
 * server starts: a wrong file is then one line naming it (GnuTLS would
 * print three, ending in an unrelated errno). */
static int check_tls_files(const char *cert, const char *cert_pem, const char *key,
			   const char *key_pem)
{
	BIO *b = BIO_new_mem_buf(cert_pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
	EVP_PKEY *k = NULL;
	int rc = 0;

	BIO_free(b);
	if (x == NULL) {
		rc = cli_error(CLI_EXIT_USAGE, "serve: --tls-cert %s is not a PEM certificate",
			       cert);
		goto done;
	}
	b = BIO_new_mem_buf(key_pem, -1);
	k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (k == NULL)
		rc = cli_error(CLI_EXIT_USAGE,
			       "serve: --tls-key %s is not a PEM private key without a passphrase",
			       key);
	else if (X509_check_private_key(x, k) != 1)
		rc = cli_error(CLI_EXIT_USAGE,
			       "serve: --tls-key %s is not the key of the certificate in %s", key,
			       cert);
done:
	EVP_PKEY_free(k);
	X509_free(x);
	ERR_clear_error();
	return rc;
}

typedef struct {
	const char *listen, *tokens, *cert, *key;
	unsigned long threads, maxc;
	unsigned long long timeout_ms;
	int routes_only;
} serve_opts;

/* serve's arguments into *o: -1 to go on, else the exit code. */
static int parse_serve_args(cli_context *ctx, int argc, char **argv, serve_opts *o)
{
	enum { O_LISTEN = 1, O_TOKENS, O_RO, O_THREADS, O_MAXC, O_TIMEOUT, O_CERT, O_KEY, O_ROUTES };
	static const cli_option opts[] = {
		{"listen", 0, 1, O_LISTEN},      {"token-file", 0, 1, O_TOKENS},
		{"read-only", 0, 0, O_RO},       {"threads", 0, 1, O_THREADS},
		{"max-connections", 0, 1, O_MAXC}, {"timeout", 0, 1, O_TIMEOUT},
		{"tls-cert", 0, 1, O_CERT},      {"tls-key", 0, 1, O_KEY},
		{"routes", 0, 0, O_ROUTES},      {NULL, 0, 0, 0}};
	const char *arg;
	cli_args it;
	int id, rc;

	*o = (serve_opts){.listen = "127.0.0.1:8421", .threads = 4, .maxc = 64, .timeout_ms = 30000};
	cli_args_init(&it, ctx, "serve", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		char *end;
		unsigned long v;

		switch (id) {
		case CLI_ARG_ERROR: return CLI_EXIT_USAGE;
		case CLI_ARG_HELP: return cli_print_command_help("serve");
		case CLI_ARG_POSITIONAL: return cli_usage_error("serve", "unexpected argument '%s'", arg);
		case O_LISTEN: o->listen = arg; break;
		case O_TOKENS: o->tokens = arg; break;
		case O_RO: srv.read_only = 1; break;
		case O_CERT: o->cert = arg; break;
		case O_KEY: o->key = arg; break;
		case O_ROUTES: o->routes_only = 1; break;
		case O_THREADS:
		case O_MAXC:
			v = strtoul(arg, &end, 10);
			if (*arg == '\0' || *end != '\0' || v < 1 || v > 4096)
				return cli_usage_error("serve", "--%s: expected a number from 1 to 4096, not '%s'",
						       id == O_THREADS ? "threads" : "max-connections", arg);
			*(id == O_THREADS ? &o->threads : &o->maxc) = v;
			break;
		case O_TIMEOUT:
			if ((rc = cli_duration_option("serve", "--timeout", arg, 1000, 3600 * 1000ULL,
						      &o->timeout_ms)) != 0)
				return rc;
			break;
		default: break;
		}
	}
	if ((o->cert == NULL) != (o->key == NULL))
		return cli_usage_error("serve", "--tls-cert and --tls-key go together");
	return -1;
}

static int print_routes(void)
{
	size_t n;
	const serve_route *r = serve_routes(&n);

	for (size_t i = 0; i < n; i++)
		printf("%s %s\n", r[i].method, r[i].path);
	return cli_finish(CLI_EXIT_OK);
}

/* What the daemon needs before it starts: the libraries, the tokens (and
 * the refusal to serve the network without them), the TLS files read and
 * checked, the store. */
static int prepare(cli_context *ctx, const serve_opts *o, int loopback, char **cert_pem,
		   char **key_pem)
{
	int rc;

	if ((rc = serve_mhd_load()) != 0 || (rc = serve_ssl_load()) != 0)
		return rc;
	if (o->cert != NULL && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return cli_error(CLI_EXIT_USAGE, "serve: this libmicrohttpd has no TLS support");
	if (o->tokens != NULL && (rc = load_tokens(o->tokens)) != 0)
		return rc;
	if (!loopback && !srv.have_tokens)
		return cli_error(CLI_EXIT_USAGE,
				 "serve: --listen %s is not a loopback address: refusing to serve the "
				 "store to the network without --token-file",
				 o->listen);
	if (o->cert != NULL && ((rc = read_pem(o->cert, "certificate", cert_pem)) != 0 ||
				(rc = read_pem(o->key, "key", key_pem)) != 0 ||
				(rc = check_tls_files(o->cert, *cert_pem, o->key, *key_pem)) != 0))
		return rc;
	if ((rc = cli_open_store(ctx, &srv.store)) != 0)
		return rc;
	srv.label = ctx->store_label;
	srv.ctx = ctx;
	srv.max_connections = (unsigned)o->maxc;
	return 0;
}

static struct MHD_Daemon *start_daemon(const serve_opts *o, struct sockaddr_storage *addr,
				       char *cert_pem, char *key_pem)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, cert_pem},
				       {MHD_OPTION_HTTPS_MEM_KEY, 0, key_pem},
				       {MHD_OPTION_END, 0, NULL}};

	if (addr->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (cert_pem != NULL)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	return MHD_start_daemon(flags, 0, NULL, NULL, handler, NULL,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)addr,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o->threads,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)(o->maxc + 16),
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)((o->timeout_ms + 999) / 1000),
				MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				MHD_OPTION_NOTIFY_CONNECTION, notify_connection, NULL,
				MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
				MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
}

/* "listening on http://127.0.0.1:8421 (store ...)": the port is the one
 * bound (--listen HOST:0 picks a free one; the tests read it here). */
static void say_listening(struct MHD_Daemon *d, const struct sockaddr_storage *addr, int tls)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET6_ADDRSTRLEN] = "?";
	int v6 = addr->ss_family == AF_INET6;

	if (v6)
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)addr)->sin6_addr, host,
				sizeof(host));
	else
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, host,
				sizeof(host));
	fprintf(stderr, "faucet serve: listening on %s://%s%s%s:%u (store %s%s%s)\n",
		tls ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "",
		info ? (unsigned)info->port : 0, srv.label ? srv.label : "?",
		srv.read_only ? ", read-only" : "", srv.have_tokens ? ", tokens required" : "");
}

/* Until SIGTERM or SIGINT (blocked in `set`); then stop accepting and let
 * the requests in flight finish, up to the connection timeout. */
static void wait_and_drain(struct MHD_Daemon *d, sigset_t *set, unsigned long long timeout_ms)
{
	uint64_t deadline;
	int sig = 0;

	sigdelset(set, SIGPIPE);
	if (sigwait(set, &sig) != 0)
		sig = SIGTERM;
	fprintf(stderr, "faucet serve: %s: finishing the requests in flight\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM");
	(void)MHD_quiesce_daemon(d);
	serve_events_end_streams();
	deadline = now_us() + timeout_ms * 1000u;
	while (atomic_load(&srv.inflight) > 0 && now_us() < deadline) {
		struct timespec ts = {0, 5 * 1000 * 1000};

		(void)nanosleep(&ts, NULL);
	}
	fprintf(stderr, "faucet serve: stopped\n");
}

int serve_main(cli_context *ctx, int argc, char **argv)
{
	struct sockaddr_storage addr;
	socklen_t alen = 0;
	int loopback = 0, rc;
	char *cert_pem = NULL, *key_pem = NULL;
	struct MHD_Daemon *d = NULL;
	serve_opts o;
	sigset_t set;

	if ((rc = parse_serve_args(ctx, argc, argv, &o)) >= 0)
		return rc;
	if (o.routes_only)
		return print_routes();
	if (parse_listen(o.listen, &addr, &alen, &loopback) != 0)
		return cli_usage_error("serve", "--listen: expected HOST:PORT (e.g. 127.0.0.1:8421), not '%s'",
				       o.listen);
	if ((rc = prepare(ctx, &o, loopback, &cert_pem, &key_pem)) != 0)
		goto done;
	/* Block the stop signals before any thread starts: MHD's threads
	 * inherit the mask, and only sigwait takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
		rc = cli_error(CLI_EXIT_FAILED, "serve: cannot block signals");
		goto done;
	}
	if ((d = start_daemon(&o, &addr, cert_pem, key_pem)) == NULL) {
		rc = cli_error(CLI_EXIT_FAILED, "serve: cannot listen on %s: %s", o.listen,
			       errno ? strerror(errno) : "libmicrohttpd refused to start");
		goto done;
	}
	if (serve_events_start(srv.store) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "serve: starting the event poller");
		goto done;
	}
	say_listening(d, &addr, cert_pem != NULL);
	wait_and_drain(d, &set, o.timeout_ms);
done:
	if (d != NULL) {
		serve_events_end_streams();
		MHD_stop_daemon(d);
		serve_events_stop();
	}
	faucet_store_free(srv.store);
	srv.store = NULL;
	wipe_tokens();
	if (key_pem != NULL) {
		explicit_bzero(key_pem, strlen(key_pem));
		free(key_pem);
	}
	free(cert_pem);
	return rc;
}
