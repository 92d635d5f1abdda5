/*
 * serve.h - `faucet serve`: an HTTP API over the store the command opens
 * (doc/design.md §9).
 *
 * The server is a layer above the command (scripts/check-layers.sh): it
 * uses the library's public API and the command's own helpers (faucet_buf,
 * the JSON writer, `state pipelines`' collector), nothing of the library's
 * internals.  serve.c holds the daemon (options, tokens, limits, the
 * access log, metrics, the graceful stop); api.c the routes.
 */
#ifndef FAUCET_SERVE_H
#define FAUCET_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "../cli/cli.h"
#include "../cli/jsonw.h"

#define SERVE_BODY_MAX (64u * 1024 * 1024) /* bytes of a request body (413 beyond) */

/* A request as the routes see it. */
typedef struct serve_request serve_request;

/* The answer a route builds: status, body (owned, malloc'd), content type,
 * and up to a few extra headers. */
typedef struct {
	unsigned status;
	char *body;
	size_t len;
	const char *type;
	char etag[80];      /* "" = none */
	char run[64];       /* Faucet-Run header, "" = none */
	const char *allow;  /* Allow header for 405 */
	int www_auth;       /* WWW-Authenticate: Bearer on a 401 */
	int stream_events;  /* answer with the event stream (events.c) */
	const char *csp;    /* Content-Security-Policy header, NULL = none */
} serve_reply;

typedef struct {
	const char *method; /* "GET", "PUT", ... */
	const char *path;   /* "/v1/keys/{key}": the OpenAPI template */
	int write;          /* changes the store: token scope write, not --read-only */
	const char *body_type; /* required Content-Type of a write, NULL = none needed */
	void (*fn)(serve_request *rq, serve_reply *out);
} serve_route;

/* The server's routes, in order; *n receives their number. */
const serve_route *serve_routes(size_t *n);

/* What a route handler may ask of its request. */
faucet_store *serve_store(serve_request *rq);
/* The command's context (for the command's own JSON builders). */
cli_context *serve_context(void);
const char *serve_param(serve_request *rq, const char *name); /* {p}, {key}, ...: decoded */
/* A query argument, percent-decoded (owned by the request), or NULL. */
const char *serve_arg(serve_request *rq, const char *name);
const char *serve_header(serve_request *rq, const char *name);
const char *serve_method(serve_request *rq);
const char *serve_body(serve_request *rq, size_t *len);

/* Replies.  serve_json takes `b`'s text; serve_error formats the message. */
void serve_json(serve_reply *out, unsigned status, faucet_buf *b);
void serve_error(serve_reply *out, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The reply to the library's last error: its code and message, with an
 * HTTP status chosen from the code (400 invalid, 404 not found, 409 busy,
 * 503 unavailable, ...).  Counts a store error in the metrics when the
 * store, not the request, failed. */
void serve_fail(serve_reply *out, const char *what);
/* Whether `b` of a query argument reads true ("true"/"1"); NULL is false.
 * An argument that is neither true nor false is a 400 (set in out; -1). */
int serve_bool_arg(serve_request *rq, serve_reply *out, const char *name, int *value);

/* The strong ETag of a stored value: "\"{sha256 of its JSON text}\"". */
void serve_etag(const faucet_value *v, char out[80]);
/* Whether an If-Match header value names `etag` (or is "*" and the value
 * exists). */
int serve_etag_matches(const char *header, const char *etag);

/* The command's compiled-in OpenAPI document (doc/openapi.json). */
extern const unsigned char serve_openapi_json[];
extern const size_t serve_openapi_json_len;

/* The dashboard (dashboard.c): its static files at /, /app.js and
 * /style.css.  1 when `url` is one of them (the reply set: 200, or 405 for
 * a method other than GET/HEAD), 0 when it is not. */
int serve_dashboard(const char *method, const char *url, serve_reply *out);

/* Events (events.c): the poller shared by every /v1/events client, and
 * the store's watch where it has one.  At stop: end_streams ends every
 * stream (before waiting for the requests in flight), stop joins the
 * poller and the watcher after the daemon stopped.  metrics appends their
 * figures to /metrics. */
int serve_events_start(faucet_store *s);
void serve_events_end_streams(void);
void serve_events_stop(void);
void serve_events_metrics(faucet_buf *b);
struct MHD_Connection;
struct MHD_Response;
struct MHD_Response *serve_events_response(struct MHD_Connection *conn);

/* Count a store failure for /metrics. */
void serve_count_store_error(void);
/* The metrics text (Prometheus exposition), appended to b. */
void serve_metrics_text(faucet_buf *b);

#endif
