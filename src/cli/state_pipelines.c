/*
 * state_pipelines.c - `faucet state pipelines`: every pipeline in the
 * store, with its number of data keys, its last run, its live leases and
 * whether a backfill is running.
 *
 * One scan of the store's keys (faucet_store_scan, no values) finds them
 * all: keys sharing a first component are one pipeline, and since a shared
 * prefix is one range in byte order the pipelines arrive one after the
 * other.  Only the few keys that answer the questions are read afterwards:
 * each __status__ document (its newest run) and each __lease__.  The first
 * component is what the run machinery calls the pipeline, so a tenant's
 * pipelines ("acme::orders::...") show under the tenant's name, as their
 * runs do (doc/design.md §8.7), and a key without "::" is a pipeline of
 * its own name.  A key alone cannot say whether its first component is a
 * tenant, so `--tenant T` asks: it scans "T::" and groups by the second
 * component, skipping T's own keys ("T::x", which have no third).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cli.h"
#include "jsonw.h"

typedef struct {
	char *name;
	size_t keys;
	faucet_strarray status_keys, lease_keys;
	/* filled after the scan */
	char *last_run, *last_change;
	size_t live_leases;
	int backfill;
} pipe_info;

typedef struct {
	pipe_info *items;
	size_t count, cap;
	int failed;
	const char *tenant; /* NULL, or the tenant whose pipelines these are */
	size_t skip;        /* bytes of "T::" before each key's pipeline name */
} pipe_scan;

static const char *ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0 ? s + n - t : NULL;
}

static int scan_key(const char *key, void *arg)
{
	pipe_scan *ps = arg;
	const char *name = key + ps->skip, *sep = strstr(name, "::");
	size_t len;
	pipe_info *p;

	if (sep == name)
		return 0; /* no first component: no pipeline's */
	/* A key without "::" is its own pipeline's, as its runs are; under a
	 * tenant such a key (T::x) is the tenant's own. */
	if (sep == NULL && ps->tenant != NULL)
		return 0;
	len = sep != NULL ? (size_t)(sep - name) : strlen(name);
	p = ps->count ? &ps->items[ps->count - 1] : NULL;
	if (p == NULL || strlen(p->name) != len || strncmp(p->name, name, len) != 0) {
		pipe_info *grown = faucet__reserve(ps->items, &ps->cap, ps->count + 1, sizeof(*grown), 16);

		if (grown == NULL)
			goto oom;
		ps->items = grown;
		p = &ps->items[ps->count];
		memset(p, 0, sizeof(*p));
		if ((p->name = faucet__malloc(len + 1)) == NULL)
			goto oom;
		memcpy(p->name, name, len);
		p->name[len] = '\0';
		ps->count++;
	}
	if (!faucet_run_is_bookkeeping_key(key)) {
		p->keys++;
	} else if (ends_with(key, "::__status__") != NULL) {
		if (faucet__strarray_append(&p->status_keys, key) != 0)
			goto oom;
	} else if (ends_with(key, "::__lease__") != NULL) {
		if (faucet__strarray_append(&p->lease_keys, key) != 0)
			goto oom;
	}
	return 0;
oom:
	ps->failed = 1;
	return 1;
}

/* The newest run of the pipeline's __status__ documents. */
static int read_last_run(faucet_store *s, pipe_info *p)
{
	for (size_t i = 0; i < p->status_keys.count; i++) {
		faucet_value *v = NULL;
		json_object *root, *runs, *e, *m;
		const char *run, *when = NULL;

		if (faucet_store_get(s, p->status_keys.strings[i], &v) != 0)
			return faucet_error_last()->code;
		if (v == NULL)
			continue;
		root = json_tokener_parse(faucet_value_json(v));
		faucet_value_free(v);
		if (root == NULL || !json_object_object_get_ex(root, "runs", &runs) ||
		    !json_object_is_type(runs, json_type_array) || json_object_array_length(runs) == 0 ||
		    (e = json_object_array_get_idx(runs, 0)) == NULL ||
		    !json_object_object_get_ex(e, "run", &m) || !json_object_is_type(m, json_type_string)) {
			if (root == NULL)
				(void)cli_error(0, "warning: %s is not readable JSON",
						p->status_keys.strings[i]);
			json_object_put(root);
			continue; /* foreign or empty: `faucet doctor` reports it */
		}
		run = json_object_get_string(m);
		if (p->last_run == NULL || strcmp(run, p->last_run) > 0) {
			if (json_object_object_get_ex(e, "ended_at", &m) &&
			    json_object_is_type(m, json_type_string))
				when = json_object_get_string(m);
			else if (json_object_object_get_ex(e, "started_at", &m) &&
				 json_object_is_type(m, json_type_string))
				when = json_object_get_string(m);
			free(p->last_run);
			free(p->last_change);
			p->last_run = faucet__strdup(run);
			p->last_change = when ? faucet__strdup(when) : NULL;
			if (p->last_run == NULL || (when != NULL && p->last_change == NULL)) {
				json_object_put(root);
				return faucet_error_set(FAUCET_ENOMEM, "out of memory");
			}
		}
		json_object_put(root);
	}
	return 0;
}

/* Live leases: held, not expired, and not of a holder gone from this host. */
static int read_leases(faucet_store *s, pipe_info *p, int64_t now)
{
	for (size_t i = 0; i < p->lease_keys.count; i++) {
		const char *key = p->lease_keys.strings[i];
		faucet_value *v = NULL;
		faucet_lease l;

		if (faucet_store_get(s, key, &v) != 0)
			return faucet_error_last()->code;
		if (v == NULL)
			continue; /* released meanwhile */
		if (faucet_lease_parse(v, key, &l) != 0) {
			faucet_value_free(v);
			continue; /* `faucet lock list` warns about it */
		}
		faucet_value_free(v);
		if (l.expires_at > now && !faucet_lease_holder_dead(&l)) {
			p->live_leases++;
			if (strstr(key, "::backfill::") != NULL)
				p->backfill = 1;
		}
		faucet_lease_dispose(&l);
	}
	return 0;
}

static void append_json(const pipe_scan *ps, faucet_buf *out)
{
	faucet_buf b = *out;

	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0; i < ps->count; i++) {
		const pipe_info *p = &ps->items[i];

		(void)faucet__buf_puts(&b, i ? ",{" : "{");
		if (ps->tenant != NULL) {
			cli_jw_member(&b, "tenant", 1);
			faucet__json_string(&b, ps->tenant);
		}
		cli_jw_member(&b, "pipeline", ps->tenant == NULL);
		faucet__json_string(&b, p->name);
		cli_jw_member(&b, "keys", 0);
		(void)faucet__buf_printf(&b, "%zu", p->keys);
		cli_jw_member(&b, "last_run", 0);
		faucet__json_string(&b, p->last_run);
		cli_jw_member(&b, "last_change", 0);
		faucet__json_string(&b, p->last_change);
		cli_jw_member(&b, "leases", 0);
		(void)faucet__buf_printf(&b, "%zu", p->live_leases);
		cli_jw_member(&b, "backfill_running", 0);
		(void)faucet__buf_puts(&b, p->backfill ? "true}" : "false}");
	}
	(void)faucet__buf_putc(&b, ']');
	*out = b;
}

static int print_plain(cli_context *ctx, const pipe_scan *ps)
{
	static const char *const heads[] = {"PIPELINE", "KEYS",   "LAST RUN",
					    "LAST CHANGE", "LEASES", "BACKFILL"};
	cli_table t;
	int rc;

	cli_table_init(&t, 6);
	for (size_t i = 0; i < ps->count; i++) {
		const pipe_info *p = &ps->items[i];
		char keys[32], leases[32], when[64];
		const char *cells[6];

		(void)snprintf(keys, sizeof(keys), "%zu", p->keys);
		(void)snprintf(leases, sizeof(leases), "%zu", p->live_leases);
		cells[0] = p->name;
		cells[1] = keys;
		cells[2] = p->last_run;
		cells[3] = p->last_change ? cli_time_shown(ctx, 0, p->last_change, when, sizeof(when))
					  : NULL;
		cells[4] = leases;
		cells[5] = p->backfill ? "running" : NULL;
		(void)cli_table_add(&t, cells);
	}
	rc = cli_table_print(&t, ctx, heads);
	cli_table_dispose(&t);
	return rc;
}

static void pipe_scan_dispose(pipe_scan *ps)
{
	for (size_t i = 0; i < ps->count; i++) {
		free(ps->items[i].name);
		free(ps->items[i].last_run);
		free(ps->items[i].last_change);
		faucet_strarray_dispose(&ps->items[i].status_keys);
		faucet_strarray_dispose(&ps->items[i].lease_keys);
	}
	free(ps->items);
	memset(ps, 0, sizeof(*ps));
}

/* One scan (of "T::" under a tenant) and the few reads; 0 or a FAUCET_E*
 * code (error set). */
static int collect(faucet_store *s, pipe_scan *ps)
{
	int64_t now = (int64_t)time(NULL);
	char prefix[FAUCET_KEY_MAX + 3] = "";
	int rc;

	if (ps->tenant != NULL) {
		int n = snprintf(prefix, sizeof(prefix), "%s::", ps->tenant);

		if (n < 0 || (size_t)n >= sizeof(prefix))
			return faucet_error_set(FAUCET_EINVALID, "tenant name too long");
		ps->skip = (size_t)n;
	}
	rc = faucet_store_scan(s, prefix, scan_key, ps);
	if (ps->failed)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	if (rc != 0)
		return rc < 0 ? rc : FAUCET_ERROR;
	for (size_t i = 0; i < ps->count; i++) {
		if ((rc = read_last_run(s, &ps->items[i])) != 0 ||
		    (rc = read_leases(s, &ps->items[i], now)) != 0)
			return rc;
	}
	return 0;
}

int cli_pipelines_json(faucet_store *s, const char *tenant, faucet_buf *out)
{
	pipe_scan ps = {NULL, 0, 0, 0, tenant, 0};
	int rc = collect(s, &ps);

	if (rc == 0) {
		append_json(&ps, out);
		if (out->failed)
			rc = faucet_error_set(FAUCET_ENOMEM, "out of memory");
	}
	pipe_scan_dispose(&ps);
	return rc;
}

int cli_state_pipelines(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_TENANT = 1 };
	static const cli_option opts[] = {CLI_TENANT_OPTION(OPT_TENANT), {NULL, 0, 0, 0}};
	pipe_scan ps = {NULL, 0, 0, 0, NULL, 0};
	faucet_store *s = NULL;
	const char *arg;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state pipelines", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state pipelines");
		if (id == OPT_TENANT) {
			if ((rc = cli_tenant_check("state pipelines", arg, &ps.tenant)) != 0)
				return rc;
			continue;
		}
		return cli_usage_error("state pipelines", "unexpected argument '%s'", arg);
	}
	if ((rc = cli_open_store_existing(ctx, &s)) != 0)
		return rc;
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		if (cli_pipelines_json(s, ps.tenant, &b) != 0) {
			faucet__buf_dispose(&b);
			rc = cli_fail(CLI_EXIT_FAILED, "cannot list the pipelines of %s", ctx->store_label);
		} else {
			rc = cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
		}
	} else if (collect(s, &ps) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the pipelines of %s", ctx->store_label);
	} else {
		rc = print_plain(ctx, &ps);
	}
	pipe_scan_dispose(&ps);
	faucet_store_free(s);
	return rc;
}
