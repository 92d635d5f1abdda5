/*
 * api.c - the routes of `faucet serve` under /v1/ (doc/design.md §9,
 * doc/openapi.json describes each).
 *
 * Every write is one run, as every CLI write is (§8.7): a key's write is
 * a run of the key's invocation (no lease; fenced only by the
 * compare-and-put the request asks for), an import a pipeline-level
 * exclusive run (the pipeline lease, 409 while a run holds it), an undo
 * the library's own undo run.  The run id goes back in the `Faucet-Run`
 * header and the body's "run" member; a write that changed nothing left
 * no run and says null.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"
#include "../cli/backfill_status.h"

#define PATCH_ATTEMPTS 16
#define LIST_DEFAULT 1000
#define LIST_MAX 10000

/* ---- runs around single-key writes ----------------------------------- */

/* Begin the run a write of `key` is recorded in (NULL for a bookkeeping
 * key, which the run refuses anyway).  0 or sets the reply. */
static int begin_key_run(serve_request *rq, serve_reply *out, const char *key, faucet_run **run)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	char *pipeline = NULL, *row = NULL, *command;
	const char *keys[1] = {key};
	int rc;

	*run = NULL;
	if (faucet_run_keys_invocation(keys, 1, &pipeline, &row) != 0) {
		serve_fail(out, "recording the write as a run");
		return -1;
	}
	if (pipeline == NULL) {
		serve_error(out, 400, "invalid", "%s is run bookkeeping: only runs write it", key);
		free(row);
		return -1;
	}
	command = faucet__sprintf("faucet serve: %s %s", serve_method(rq), key);
	o.no_lease = 1;
	o.command = command;
	if (row != NULL)
		o.row = row;
	else
		o.pipeline_level = 1;
	rc = faucet_run_begin(run, serve_store(rq), pipeline, &o);
	free(command);
	free(pipeline);
	free(row);
	if (rc != 0) {
		serve_fail(out, "recording the write as a run");
		return -1;
	}
	return 0;
}

/* End the run: its id into the reply when it changed something.  On a
 * failed end the reply becomes the error (the write itself landed). */
static int end_key_run(faucet_run *run, serve_reply *out, int ok)
{
	if (run == NULL)
		return 0;
	if (faucet_run_end(run, ok ? FAUCET_RUN_OK : FAUCET_RUN_FAILED, ok ? 0 : -1,
			   ok ? NULL : faucet_error_last()->message) != 0) {
		serve_fail(out, "recording the run");
		faucet_run_free(run);
		return -1;
	}
	if (ok && faucet_run_changed(run) > 0)
		(void)snprintf(out->run, sizeof(out->run), "%s", faucet_run_id(run));
	faucet_run_free(run);
	return 0;
}

static void run_member(faucet_buf *b, const serve_reply *out)
{
	cli_jw_member(b, "run", 0);
	faucet__json_string(b, out->run[0] ? out->run : NULL);
}

/* ---- health, openapi, metrics --------------------------------------- */

static void get_health(serve_request *rq, serve_reply *out)
{
	faucet_value *v = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	if (faucet_store_get(serve_store(rq), "faucet-serve-health-probe", &v) != 0) {
		serve_count_store_error();
		serve_error(out, 503, faucet_error_name(faucet_error_last()->code),
			    "the store does not answer: %s", faucet_error_last()->message);
		return;
	}
	faucet_value_free(v);
	(void)faucet__buf_puts(&b, "{\"status\":\"ok\",");
	cli_jw_member(&b, "backend", 1);
	faucet__json_string(&b, faucet_store_backend_name(serve_store(rq)));
	cli_jw_member(&b, "version", 0);
	faucet__json_string(&b, faucet_version());
	(void)faucet__buf_putc(&b, '}');
	serve_json(out, 200, &b);
}

static void get_openapi(serve_request *rq, serve_reply *out)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)rq;
	(void)faucet__buf_put(&b, (const char *)serve_openapi_json, serve_openapi_json_len);
	serve_json(out, 200, &b);
}

static void get_metrics(serve_request *rq, serve_reply *out)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)rq;
	serve_metrics_text(&b);
	serve_json(out, 200, &b);
	out->type = "text/plain; version=0.0.4";
}

/* ---- pipelines -------------------------------------------------------- */

/* ?tenant=T: the pipelines of tenant T, as `state pipelines --tenant T`. */
static void get_pipelines(serve_request *rq, serve_reply *out)
{
	const char *tenant = serve_arg(rq, "tenant");
	faucet_buf b = FAUCET_BUF_INIT;

	if (tenant != NULL && !cli_is_tenant_name(tenant)) {
		serve_error(out, 400, "invalid", "tenant: '%s' is not a tenant name (one key segment)",
			    tenant);
		return;
	}
	if (cli_pipelines_json(serve_store(rq), tenant, &b) != 0) {
		faucet__buf_dispose(&b);
		serve_fail(out, "listing the pipelines");
		return;
	}
	serve_json(out, 200, &b);
}

/* ---- keys ------------------------------------------------------------- */

typedef struct {
	const char *cursor;
	size_t limit;
	faucet_strarray keys;
	int more, failed;
} page_scan;

static int page_key(const char *key, void *arg)
{
	page_scan *ps = arg;

	if (faucet_run_is_bookkeeping_key(key))
		return 0;
	if (ps->cursor != NULL && strcmp(key, ps->cursor) <= 0)
		return 0;
	if (ps->keys.count == ps->limit) {
		ps->more = 1;
		return 1;
	}
	if (faucet__strarray_append(&ps->keys, key) != 0) {
		ps->failed = 1;
		return 1;
	}
	return 0;
}

static void get_keys(serve_request *rq, serve_reply *out)
{
	const char *prefix = serve_arg(rq, "prefix"), *cursor = serve_arg(rq, "cursor");
	const char *limit = serve_arg(rq, "limit");
	page_scan ps = {cursor, LIST_DEFAULT, {NULL, 0}, 0, 0};
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	if (limit != NULL) {
		char *end;
		unsigned long v = strtoul(limit, &end, 10);

		if (*limit == '\0' || *end != '\0' || v < 1 || v > LIST_MAX) {
			serve_error(out, 400, "invalid", "limit: expected a number from 1 to %d, not '%s'",
				    LIST_MAX, limit);
			return;
		}
		ps.limit = v;
	}
	rc = faucet_store_scan(serve_store(rq), prefix ? prefix : "", page_key, &ps);
	if (ps.failed || rc < 0) {
		faucet_strarray_dispose(&ps.keys);
		serve_fail(out, "listing the keys");
		return;
	}
	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "keys", 1);
	cli_jw_string_array(&b, &ps.keys);
	cli_jw_member(&b, "next_cursor", 0);
	faucet__json_string(&b, ps.more && ps.keys.count ? ps.keys.strings[ps.keys.count - 1] : NULL);
	(void)faucet__buf_putc(&b, '}');
	faucet_strarray_dispose(&ps.keys);
	serve_json(out, 200, &b);
}

static int valid_key(serve_reply *out, const char *key)
{
	if (faucet_validate_key(key) != 0) {
		serve_fail(out, "the key");
		return 0;
	}
	return 1;
}

static void get_key(serve_request *rq, serve_reply *out)
{
	const char *key = serve_param(rq, "key");
	const char *inm = serve_header(rq, "If-None-Match");
	faucet_value *v = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_key(out, key))
		return;
	if (faucet_store_get(serve_store(rq), key, &v) != 0) {
		serve_fail(out, "reading the key");
		return;
	}
	if (v == NULL) {
		serve_error(out, 404, "not-found", "no value at %s", key);
		return;
	}
	serve_etag(v, out->etag);
	if (inm != NULL && serve_etag_matches(inm, out->etag)) {
		faucet_value_free(v);
		out->status = 304;
		out->type = "application/json";
		return;
	}
	(void)faucet__buf_put(&b, faucet_value_json(v), faucet_value_len(v));
	faucet_value_free(v);
	serve_json(out, 200, &b);
}

/* The If-Match / If-None-Match conditions of a write of `key`: *expected
 * (owned) is the value to compare against, *conditional whether there is a
 * condition at all.  Returns 0, or -1 with the reply set (412). */
static int write_condition(serve_request *rq, serve_reply *out, const char *key,
			   faucet_value **expected, int *conditional, int *create_only)
{
	const char *im = serve_header(rq, "If-Match"), *inm = serve_header(rq, "If-None-Match");
	char etag[80] = "";

	*expected = NULL;
	*conditional = 0;
	*create_only = 0;
	if (inm != NULL) {
		if (strcmp(inm, "*") != 0) {
			serve_error(out, 400, "invalid", "If-None-Match on a write takes only '*'");
			return -1;
		}
		*conditional = 1;
		*create_only = 1;
		return 0;
	}
	if (im == NULL)
		return 0;
	*conditional = 1;
	if (faucet_store_get(serve_store(rq), key, expected) != 0) {
		serve_fail(out, "reading the key");
		return -1;
	}
	if (*expected != NULL)
		serve_etag(*expected, etag);
	if (*expected == NULL || !serve_etag_matches(im, etag)) {
		serve_error(out, 412, "condition", "If-Match does not hold: %s %s", key,
			    *expected == NULL ? "has no value" : "holds another value");
		if (*expected != NULL)
			(void)snprintf(out->etag, sizeof(out->etag), "%s", etag);
		faucet_value_free(*expected);
		*expected = NULL;
		return -1;
	}
	return 0;
}

static void write_reply(serve_reply *out, unsigned status, const char *key, const char *what)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "key", 1);
	faucet__json_string(&b, key);
	cli_jw_member(&b, "outcome", 0);
	faucet__json_string(&b, what);
	run_member(&b, out);
	(void)faucet__buf_putc(&b, '}');
	serve_json(out, status, &b);
}

static void put_key(serve_request *rq, serve_reply *out)
{
	const char *key = serve_param(rq, "key");
	faucet_value *value = NULL, *expected = NULL;
	int conditional, create_only, written = 1, rc;
	faucet_run *run = NULL;
	size_t len;
	const char *body = serve_body(rq, &len);

	if (!valid_key(out, key))
		return;
	if (faucet_value_parse(&value, body, len) != 0) {
		serve_fail(out, "the request body");
		return;
	}
	if (write_condition(rq, out, key, &expected, &conditional, &create_only) != 0 ||
	    begin_key_run(rq, out, key, &run) != 0)
		goto done;
	if (conditional)
		rc = faucet_run_compare_and_put(run, key, expected, value, &written);
	else
		rc = faucet_run_put(run, key, value);
	if (rc != 0) {
		serve_fail(out, "writing the key");
		(void)end_key_run(run, out, 0);
		goto done;
	}
	if (end_key_run(run, out, 1) != 0)
		goto done;
	if (!written) {
		serve_error(out, 412, "condition", "%s: %s", key,
			    create_only ? "a value is already there (If-None-Match: *)"
					: "the value changed since it was read (If-Match)");
		goto done;
	}
	serve_etag(value, out->etag);
	write_reply(out, create_only ? 201 : 200, key, "written");
done:
	faucet_value_free(value);
	faucet_value_free(expected);
}

static void delete_key(serve_request *rq, serve_reply *out)
{
	const char *key = serve_param(rq, "key");
	faucet_value *expected = NULL, *current = NULL;
	int conditional, create_only, deleted = 1, rc;
	faucet_run *run = NULL;

	if (!valid_key(out, key))
		return;
	if (write_condition(rq, out, key, &expected, &conditional, &create_only) != 0)
		return;
	if (create_only) {
		serve_error(out, 400, "invalid", "If-None-Match: * does not apply to a delete");
		return;
	}
	if (!conditional) {
		if (faucet_store_get(serve_store(rq), key, &current) != 0) {
			serve_fail(out, "reading the key");
			return;
		}
		if (current == NULL) {
			serve_error(out, 404, "not-found", "no value at %s", key);
			return;
		}
		expected = current; /* a delete of what was read: same as the CLI's */
		conditional = 1;
	}
	if (begin_key_run(rq, out, key, &run) != 0)
		goto done;
	rc = faucet_run_compare_and_delete(run, key, expected, &deleted);
	if (rc != 0) {
		serve_fail(out, "deleting the key");
		(void)end_key_run(run, out, 0);
		goto done;
	}
	if (end_key_run(run, out, 1) != 0)
		goto done;
	if (!deleted) {
		serve_error(out, 412, "condition", "%s: the value changed since it was read", key);
		goto done;
	}
	write_reply(out, 200, key, "deleted");
done:
	faucet_value_free(expected);
}

static int is_object(const faucet_value *v)
{
	const char *t = faucet_value_json(v);

	while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
		t++;
	return *t == '{';
}

static void patch_key(serve_request *rq, serve_reply *out)
{
	const char *key = serve_param(rq, "key");
	const char *im = serve_header(rq, "If-Match");
	faucet_value *patch = NULL;
	size_t len;
	const char *body = serve_body(rq, &len);

	if (!valid_key(out, key))
		return;
	if (faucet_value_parse(&patch, body, len) != 0) {
		serve_fail(out, "the merge patch");
		return;
	}
	for (int attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
		faucet_value *current = NULL, *merged = NULL;
		faucet_run *run = NULL;
		char etag[80] = "";
		int written = 0;

		if (faucet_store_get(serve_store(rq), key, &current) != 0) {
			serve_fail(out, "reading the key");
			break;
		}
		if (current != NULL)
			serve_etag(current, etag);
		if (im != NULL && (current == NULL || !serve_etag_matches(im, etag))) {
			serve_error(out, 412, "condition", "If-Match does not hold: %s %s", key,
				    current == NULL ? "has no value" : "holds another value");
			faucet_value_free(current);
			break;
		}
		/* As `state merge`: an object patch over a value that is not an
		 * object would drop the stored value; refused. */
		if (current != NULL && is_object(patch) && !is_object(current)) {
			serve_error(out, 400, "invalid",
				    "%s holds a value that is not an object; a merge patch would "
				    "replace it (PUT it instead)",
				    key);
			faucet_value_free(current);
			break;
		}
		if (faucet_value_merge_patch(current, patch, &merged) != 0) {
			serve_fail(out, "merging");
			faucet_value_free(current);
			break;
		}
		if (begin_key_run(rq, out, key, &run) != 0) {
			faucet_value_free(current);
			faucet_value_free(merged);
			break;
		}
		if (faucet_run_compare_and_put(run, key, current, merged, &written) != 0) {
			serve_fail(out, "writing the key");
			(void)end_key_run(run, out, 0);
			faucet_value_free(current);
			faucet_value_free(merged);
			break;
		}
		faucet_value_free(current);
		if (end_key_run(run, out, 1) != 0) {
			faucet_value_free(merged);
			break;
		}
		if (written) {
			serve_etag(merged, out->etag);
			faucet_value_free(merged);
			write_reply(out, 200, key, "merged");
			break;
		}
		faucet_value_free(merged);
		if (attempt + 1 == PATCH_ATTEMPTS)
			serve_error(out, 409, "contention",
				    "%s kept changing under the merge (%d attempts)", key, PATCH_ATTEMPTS);
	}
	faucet_value_free(patch);
}

/* ---- export, import --------------------------------------------------- */

static int valid_pipeline(serve_reply *out, const char *p)
{
	if (faucet_validate_key(p) != 0 || strstr(p, "::") != NULL) {
		serve_error(out, 400, "invalid", "invalid pipeline name '%s'", p);
		return 0;
	}
	return 1;
}

static void get_export(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p");
	faucet_export *e = NULL;
	char *text = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_pipeline(out, p))
		return;
	if (faucet_export_namespace(serve_store(rq), p, &e) != 0 ||
	    faucet_export_to_json(e, 0, &text) != 0) {
		faucet_export_free(e);
		serve_fail(out, "exporting");
		return;
	}
	faucet_export_free(e);
	(void)faucet__buf_puts(&b, text);
	faucet_free(text);
	serve_json(out, 200, &b);
}

typedef struct {
	serve_request *rq;
	faucet_run *run;
} import_hook_ctx;

static int import_begin(void *arg, const char *pipeline, const char *row, faucet_run **run)
{
	import_hook_ctx *h = arg;
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;

	o.no_lease = 1;
	o.exclusive = 1; /* a bulk write: the pipeline lease, as `state import` */
	o.command = "faucet serve: import";
	if (row != NULL)
		o.row = row;
	else
		o.pipeline_level = 1;
	if (faucet_run_begin(&h->run, serve_store(h->rq), pipeline, &o) != 0)
		return faucet_error_last()->code;
	*run = h->run;
	return 0;
}

static void post_import(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p");
	faucet_import_options o = FAUCET_IMPORT_OPTIONS_INIT;
	faucet_import_run_hook hook = FAUCET_IMPORT_RUN_HOOK_INIT;
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	import_hook_ctx h = {rq, NULL};
	faucet_export *doc = NULL;
	faucet_buf b = FAUCET_BUF_INIT;
	size_t len;
	const char *body = serve_body(rq, &len);
	FILE *in;
	int rc;

	report = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	if (!valid_pipeline(out, p))
		return;
	if (serve_bool_arg(rq, out, "replace", &o.replace) != 0 ||
	    serve_bool_arg(rq, out, "dry_run", &o.dry_run) != 0)
		return;
	/* The document must be this pipeline's: checked before anything. */
	if (faucet_export_parse(&doc, body, len) != 0) {
		serve_fail(out, "the import document");
		return;
	}
	if (strcmp(faucet_export_pipeline(doc), p) != 0) {
		serve_error(out, 400, "invalid", "the document is pipeline %s's, not %s's",
			    faucet_export_pipeline(doc), p);
		faucet_export_free(doc);
		return;
	}
	faucet_export_free(doc);
	if ((in = fmemopen((void *)body, len, "r")) == NULL) {
		serve_error(out, 500, "io", "cannot read the request body");
		return;
	}
	hook.begin_run = import_begin;
	hook.ctx = &h;
	rc = faucet_import_file_recorded(serve_store(rq), in, &o, &hook, &report);
	(void)fclose(in);
	if (rc != 0 && h.run == NULL) {
		serve_fail(out, "importing");
		faucet_import_report_dispose(&report);
		return;
	}
	if (rc != 0) {
		char msg[1024];
		int code = faucet_error_last()->code;

		(void)snprintf(msg, sizeof(msg), "%s", faucet_error_last()->message);
		(void)end_key_run(h.run, out, 0);
		(void)faucet_error_set(code, "%s", msg);
		serve_fail(out, "importing");
		faucet_import_report_dispose(&report);
		return;
	}
	if (end_key_run(h.run, out, 1) != 0) {
		faucet_import_report_dispose(&report);
		return;
	}
	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "pipeline", 1);
	faucet__json_string(&b, p);
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, o.dry_run ? "true" : "false");
	cli_jw_member(&b, "written", 0);
	cli_jw_string_array(&b, &report.written);
	cli_jw_member(&b, "deleted", 0);
	cli_jw_string_array(&b, &report.deleted);
	run_member(&b, out);
	(void)faucet__buf_putc(&b, '}');
	faucet_import_report_dispose(&report);
	serve_json(out, 200, &b);
}

/* ---- runs and undo ---------------------------------------------------- */

static void get_runs(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p"), *row = serve_arg(rq, "row");
	char *json = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_pipeline(out, p))
		return;
	if (faucet_run_history_json(serve_store(rq), p, row, &json) != 0) {
		serve_fail(out, "reading the run history");
		return;
	}
	(void)faucet__buf_puts(&b, json);
	faucet_free(json);
	serve_json(out, 200, &b);
}

static void value_or_null(faucet_buf *b, const faucet_value *v)
{
	if (v == NULL)
		(void)faucet__buf_puts(b, "null");
	else
		(void)faucet__buf_put(b, faucet_value_json(v), faucet_value_len(v));
}

static void post_undo(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p"), *run = serve_param(rq, "run");
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_pipeline(out, p))
		return;
	if (serve_bool_arg(rq, out, "force", &o.force) != 0 ||
	    serve_bool_arg(rq, out, "dry_run", &o.dry_run) != 0)
		return;
	o.run = run;
	o.row = serve_arg(rq, "row");
	o.command = "faucet serve: undo";
	if (faucet_run_undo(serve_store(rq), p, &o, &res) != 0) {
		serve_fail(out, "undo");
		faucet_undo_result_dispose(&res);
		return;
	}
	if (res.undo_run != NULL)
		(void)snprintf(out->run, sizeof(out->run), "%s", res.undo_run);
	(void)faucet__buf_putc(&b, '{');
	if (res.conflict) {
		faucet_buf msg = FAUCET_BUF_INIT;

		if (res.conflict_total > 1)
			(void)faucet__buf_printf(&msg, "%zu keys changed since run %s wrote them (see "
						      "conflicts); nothing was restored (?force=true "
						      "restores anyway)",
						res.conflict_total, res.run);
		else
			(void)faucet__buf_printf(&msg, "%s changed since run %s wrote it; nothing was "
						      "restored (?force=true restores anyway)",
						res.conflict_key ? res.conflict_key : "a key", res.run);
		(void)faucet__buf_puts(&b, "\"error\":{");
		cli_jw_member(&b, "code", 1);
		faucet__json_string(&b, "conflict");
		cli_jw_member(&b, "message", 0);
		faucet__json_string(&b, msg.ptr ? msg.ptr : "conflict");
		faucet__buf_dispose(&msg);
		(void)faucet__buf_puts(&b, "},");
	}
	cli_jw_member(&b, "run", 1);
	faucet__json_string(&b, res.run);
	cli_jw_member(&b, "scope", 0);
	faucet__json_string(&b, res.scope);
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, o.dry_run ? "true" : "false");
	cli_jw_member(&b, "undo_run", 0);
	faucet__json_string(&b, res.undo_run);
	cli_jw_member(&b, "restored", 0);
	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0; !res.conflict && i < res.restored.count; i++) {
		(void)faucet__buf_puts(&b, i ? ",{" : "{");
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, res.restored.strings[i]);
		cli_jw_member(&b, "from", 0);
		value_or_null(&b, res.replaced ? res.replaced[i] : NULL);
		cli_jw_member(&b, "to", 0);
		value_or_null(&b, res.restored_to ? res.restored_to[i] : NULL);
		(void)faucet__buf_putc(&b, '}');
	}
	(void)faucet__buf_putc(&b, ']');
	cli_jw_member(&b, "conflicts", 0);
	(void)faucet__buf_putc(&b, '[');
	/* Every conflicting key (the library lists up to max_conflicts). */
	for (size_t i = 0; res.conflict && i < res.conflict_count; i++) {
		const faucet_undo_conflict *c = &res.conflicts[i];

		(void)faucet__buf_puts(&b, i ? ",{" : "{");
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, c->key);
		cli_jw_member(&b, "current", 0);
		value_or_null(&b, c->current);
		cli_jw_member(&b, "wrote", 0);
		value_or_null(&b, c->wrote_known ? c->wrote : NULL);
		cli_jw_member(&b, "wrote_known", 0);
		(void)faucet__buf_puts(&b, c->wrote_known ? "true" : "false");
		cli_jw_member(&b, "changed_by", 0);
		faucet__json_string(&b, c->run);
		(void)faucet__buf_putc(&b, '}');
	}
	(void)faucet__buf_putc(&b, ']');
	cli_jw_member(&b, "conflict_total", 0);
	(void)faucet__buf_printf(&b, "%zu", res.conflict_total);
	cli_jw_member(&b, "conflicts_truncated", 0);
	(void)faucet__buf_puts(&b, res.conflicts_truncated ? "true" : "false");
	(void)faucet__buf_putc(&b, '}');
	serve_json(out, res.conflict ? 409 : 200, &b);
	faucet_undo_result_dispose(&res);
}

/* ---- locks ------------------------------------------------------------ */

static int is_lease_key(const char *key)
{
	static const char tail[] = "::__lease__";
	size_t n = strlen(key), t = sizeof(tail) - 1;

	return n > t && strcmp(key + n - t, tail) == 0;
}

static void get_locks(serve_request *rq, serve_reply *out)
{
	faucet_strarray keys = {NULL, 0};
	int64_t now = (int64_t)time(NULL);
	faucet_buf b = FAUCET_BUF_INIT;
	size_t n = 0;

	if (faucet_store_list(serve_store(rq), "", &keys) != 0) {
		serve_fail(out, "listing the leases");
		return;
	}
	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0; i < keys.count; i++) {
		faucet_value *v = NULL;
		faucet_lease l;
		char until[64], etag[80];

		if (!is_lease_key(keys.strings[i]))
			continue;
		if (faucet_store_get(serve_store(rq), keys.strings[i], &v) != 0) {
			serve_fail(out, "reading a lease");
			faucet_strarray_dispose(&keys);
			faucet__buf_dispose(&b);
			return;
		}
		if (v == NULL || faucet_lease_parse(v, keys.strings[i], &l) != 0) {
			faucet_value_free(v);
			continue; /* released meanwhile, or not a lease (doctor says so) */
		}
		serve_etag(v, etag);
		faucet_value_free(v);
		(void)faucet_utc_text(l.expires_at, until, sizeof(until));
		(void)faucet__buf_puts(&b, n++ ? ",{" : "{");
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, keys.strings[i]);
		cli_jw_member(&b, "holder", 0);
		faucet__json_string(&b, l.holder);
		cli_jw_member(&b, "run", 0);
		faucet__json_string(&b, l.run);
		cli_jw_member(&b, "expires_at", 0);
		(void)faucet__buf_printf(&b, "%lld", (long long)l.expires_at);
		cli_jw_member(&b, "expires", 0);
		faucet__json_string(&b, until);
		cli_jw_member(&b, "state", 0);
		faucet__json_string(&b, faucet_lease_holder_dead(&l) ? "dead"
			      : l.expires_at > now        ? "live"
							  : "expired");
		cli_jw_member(&b, "etag", 0);
		faucet__json_string(&b, etag);
		(void)faucet__buf_putc(&b, '}');
		faucet_lease_dispose(&l);
	}
	(void)faucet__buf_putc(&b, ']');
	faucet_strarray_dispose(&keys);
	serve_json(out, 200, &b);
}

static void delete_lock(serve_request *rq, serve_reply *out)
{
	const char *key = serve_param(rq, "key"), *im = serve_header(rq, "If-Match");
	faucet_value *v = NULL;
	char etag[80];
	int deleted = 0;
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_key(out, key))
		return;
	if (!is_lease_key(key)) {
		serve_error(out, 400, "invalid", "%s is not a lease key (...::__lease__)", key);
		return;
	}
	if (faucet_store_get(serve_store(rq), key, &v) != 0) {
		serve_fail(out, "reading the lease");
		return;
	}
	if (v == NULL) {
		serve_error(out, 404, "not-found", "no lease at %s", key);
		return;
	}
	serve_etag(v, etag);
	if (im != NULL && !serve_etag_matches(im, etag)) {
		serve_error(out, 412, "condition", "If-Match does not hold: the lease at %s changed",
			    key);
		(void)snprintf(out->etag, sizeof(out->etag), "%s", etag);
		faucet_value_free(v);
		return;
	}
	/* The lease just read, and only it: one renewed meanwhile is kept. */
	if (faucet_store_compare_and_delete(serve_store(rq), key, v, &deleted) != 0) {
		faucet_value_free(v);
		serve_fail(out, "breaking the lease");
		return;
	}
	faucet_value_free(v);
	if (!deleted) {
		serve_error(out, 412, "condition", "the lease at %s changed while it was broken", key);
		return;
	}
	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "key", 1);
	faucet__json_string(&b, key);
	cli_jw_member(&b, "outcome", 0);
	faucet__json_string(&b, "broken");
	(void)faucet__buf_putc(&b, '}');
	serve_json(out, 200, &b);
}

/* ---- backfills (what `backfill status --json` gives) ------------------ */

static void get_backfills(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p");
	faucet_buf b = FAUCET_BUF_INIT;

	if (!valid_pipeline(out, p))
		return;
	faucet_error_clear();
	if (cli_backfill_status_json(serve_context(), serve_store(rq), p, NULL, &b) != 0) {
		faucet__buf_dispose(&b);
		serve_fail(out, "reading the backfills");
		return;
	}
	serve_json(out, 200, &b);
}

static void get_backfill(serve_request *rq, serve_reply *out)
{
	const char *p = serve_param(rq, "p"), *hash = serve_param(rq, "hash");
	faucet_backfill_marker *m = NULL;
	faucet_buf b = FAUCET_BUF_INIT;
	char *key;
	size_t n = strlen(hash);

	if (!valid_pipeline(out, p))
		return;
	if (n != 16 || strspn(hash, "0123456789abcdef") != n) {
		serve_error(out, 400, "invalid", "a range hash is 16 lower-case hex digits, not '%s'",
			    hash);
		return;
	}
	if ((key = faucet_backfill_marker_key(p, hash)) == NULL) {
		serve_error(out, 500, "out-of-memory", "out of memory");
		return;
	}
	if (faucet_backfill_marker_load(serve_store(rq), key, &m) != 0) {
		free(key);
		serve_fail(out, "reading the backfill marker");
		return;
	}
	if (m == NULL) {
		serve_error(out, 404, "not-found", "no backfill of %s with range hash %s (no marker at %s)",
			    p, hash, key);
		free(key);
		return;
	}
	faucet_backfill_marker_free(m);
	free(key);
	faucet_error_clear();
	if (cli_backfill_status_json(serve_context(), serve_store(rq), p, hash, &b) != 0) {
		faucet__buf_dispose(&b);
		serve_fail(out, "reading the backfill");
		return;
	}
	serve_json(out, 200, &b);
}

/* ---- events ----------------------------------------------------------- */

static void get_events(serve_request *rq, serve_reply *out)
{
	(void)rq;
	out->status = 200;
	out->stream_events = 1; /* events.c streams it */
}

/* ---- the table -------------------------------------------------------- */

#define JSON "application/json"

static const serve_route routes[] = {
	{"GET", "/v1/health", 0, NULL, get_health},
	{"GET", "/v1/openapi.json", 0, NULL, get_openapi},
	{"GET", "/metrics", 0, NULL, get_metrics},
	{"GET", "/v1/pipelines", 0, NULL, get_pipelines},
	{"GET", "/v1/keys", 0, NULL, get_keys},
	{"GET", "/v1/keys/{key}", 0, NULL, get_key},
	{"PUT", "/v1/keys/{key}", 1, JSON, put_key},
	{"PATCH", "/v1/keys/{key}", 1, "application/merge-patch+json", patch_key},
	{"DELETE", "/v1/keys/{key}", 1, NULL, delete_key},
	{"GET", "/v1/pipelines/{p}/export", 0, NULL, get_export},
	{"POST", "/v1/pipelines/{p}/import", 1, JSON, post_import},
	{"GET", "/v1/pipelines/{p}/runs", 0, NULL, get_runs},
	{"POST", "/v1/pipelines/{p}/runs/{run}/undo", 1, JSON, post_undo},
	{"GET", "/v1/locks", 0, NULL, get_locks},
	{"DELETE", "/v1/locks/{key}", 1, NULL, delete_lock},
	{"GET", "/v1/pipelines/{p}/backfills", 0, NULL, get_backfills},
	{"GET", "/v1/pipelines/{p}/backfills/{hash}", 0, NULL, get_backfill},
	{"GET", "/v1/events", 0, NULL, get_events},
};

const serve_route *serve_routes(size_t *n)
{
	*n = sizeof(routes) / sizeof(routes[0]);
	return routes;
}

