/*
 * backfill_status.c - `faucet backfill status`: every backfill of a
 * pipeline with its counts, or one range unit by unit.
 *
 * Everything shown is read from the store: the markers at
 * {pipeline}::__backfill__::{hash} (outcomes, attempts, times, the zone)
 * and the unit leases at {pipeline}::backfill::{hash}::{unit}::__lease__
 * (a live one is a running unit, and names its holder).  A marker names its
 * range only by its descriptor, "time|{from}|{to}|{window}|{row}", so the
 * units are planned again from it - in the zone the marker records, or in
 * UTC for a marker the original wrote (it records none), which cuts the same
 * units for every elapsed window and shows the times in UTC.
 *
 * It is a read command: the store must exist (cli_open_store_existing) and
 * nothing is written, not even a lease.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "backfill_status.h"
#include "jsonw.h"

#define LEASE_SUFFIX "::__lease__"

/* A live lease of one unit. */
typedef struct {
	char *unit; /* the set is sorted by it (lease_of searches it) */
	char *holder;
	int64_t expires_at;
} live_lease;

typedef struct {
	live_lease *v;
	size_t count, cap;
} lease_set;

static void leases_dispose(lease_set *ls)
{
	for (size_t i = 0; i < ls->count; i++) {
		free(ls->v[i].unit);
		free(ls->v[i].holder);
	}
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

static int unit_order(const void *a, const void *b)
{
	return strcmp(((const live_lease *)a)->unit, ((const live_lease *)b)->unit);
}

static int unit_is(const void *unit, const void *l)
{
	return strcmp((const char *)unit, ((const live_lease *)l)->unit);
}

static const live_lease *lease_of(const lease_set *ls, const char *unit)
{
	return ls->count ? bsearch(unit, ls->v, ls->count, sizeof(*ls->v), unit_is) : NULL;
}

/* Read one lease value; 1 when it is live (expires after `now`). */
static int parse_lease(const faucet_value *v, int64_t now, char **holder, int64_t *expires)
{
	json_object *tree = json_tokener_parse(faucet_value_json(v)), *h, *e;
	int live = 0;

	*holder = NULL;
	*expires = 0;
	if (tree != NULL && json_object_is_type(tree, json_type_object) &&
	    json_object_object_get_ex(tree, "expires_at", &e) && json_object_is_type(e, json_type_int)) {
		*expires = json_object_get_int64(e);
		live = *expires > now;
		if (json_object_object_get_ex(tree, "holder", &h) &&
		    json_object_is_type(h, json_type_string))
			*holder = faucet__strdup(json_object_get_string(h));
		else
			*holder = faucet__strdup("?");
		if (*holder == NULL)
			live = -1;
	}
	json_object_put(tree);
	return live;
}

/* The live leases of one range's units, sorted by unit id (the listing is
 * in key order, and unit ids sort the same way). */
static int load_leases(cli_context *ctx, faucet_store *s, const char *pipeline, const char *hash,
		       int64_t now, lease_set *out)
{
	faucet_strarray keys = {NULL, 0};
	char *prefix = faucet__sprintf("%s::backfill::%s::", pipeline, hash);
	size_t plen, slen = strlen(LEASE_SUFFIX);
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	plen = strlen(prefix);
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the unit leases of %s", ctx->store_label);
		goto out;
	}
	for (size_t i = 0; i < keys.count && rc == 0; i++) {
		const char *k = keys.strings[i];
		size_t klen = strlen(k);
		faucet_value *v = NULL;
		live_lease l = {NULL, NULL, 0};
		int live;

		if (klen <= plen + slen || strcmp(k + klen - slen, LEASE_SUFFIX) != 0 ||
		    memchr(k + plen, ':', klen - plen - slen) != NULL)
			continue;
		if (faucet_store_get(s, k, &v) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", k, ctx->store_label);
			break;
		}
		if (v == NULL)
			continue; /* released meanwhile */
		live = parse_lease(v, now, &l.holder, &l.expires_at);
		faucet_value_free(v);
		if (live < 0) {
			rc = cli_error(CLI_EXIT_FAILED, "out of memory");
			break;
		}
		if (!live) {
			free(l.holder);
			continue;
		}
		l.unit = faucet__sprintf("%.*s", (int)(klen - plen - slen), k + plen);
		live_lease *grown = l.unit ? faucet__reserve(out->v, &out->cap, out->count + 1,
							 sizeof(*out->v), 8)
					   : NULL;
		if (grown == NULL) {
			free(l.unit);
			free(l.holder);
			rc = cli_error(CLI_EXIT_FAILED, "out of memory");
			break;
		}
		out->v = grown;
		out->v[out->count++] = l;
	}
out:
	if (rc != 0)
		leases_dispose(out);
	/* Keys sort by "{unit}::__lease__", which is not always the order of
	 * the units themselves ("a-b::" before "a::"). */
	else if (out->count > 1)
		qsort(out->v, out->count, sizeof(*out->v), unit_order);
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}

/* ---- a range from its marker ---------------------------------------------- */

/* The parts of "time|{from}|{to}|{window}|{row}" (owned copies). */
typedef struct {
	char *buf;
	const char *from, *to, *window, *row;
} descriptor_parts;

static int split_descriptor(const char *descriptor, descriptor_parts *d)
{
	char *p, *parts[5];
	int n = 0;

	memset(d, 0, sizeof(*d));
	d->buf = faucet__strdup(descriptor);
	if (d->buf == NULL)
		return FAUCET_ENOMEM;
	for (p = d->buf; n < 5;) {
		parts[n++] = p;
		p = strchr(p, '|');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	if (n != 5 || p != NULL || strcmp(parts[0], "time") != 0) {
		free(d->buf);
		d->buf = NULL;
		return faucet_error_set(FAUCET_ECONFIG, "backfill marker: unreadable descriptor '%s'",
					descriptor);
	}
	d->from = parts[1];
	d->to = parts[2];
	d->window = parts[3];
	d->row = parts[4];
	return 0;
}

/* Plan the marker's range again.  *window_shown gets the window as the
 * descriptor says it ("86400s", "1d", "whole"). */
static int plan_of_marker(const faucet_backfill_marker *m, faucet_backfill_plan **out,
			  descriptor_parts *d)
{
	faucet_backfill_range r;
	int rc = split_descriptor(faucet_backfill_marker_descriptor(m), d);

	*out = NULL;
	if (rc != 0)
		return rc;
	memset(&r, 0, sizeof(r));
	r.from = d->from;
	r.to = d->to;
	r.window = strcmp(d->window, "whole") == 0 ? NULL : d->window;
	r.timezone = faucet_backfill_marker_timezone(m);
	r.row = d->row;
	return faucet_backfill_plan_new(out, &r);
}

/* The descriptor's window for people: elapsed seconds in the largest unit
 * that divides them ("43200" is "12h"), calendar steps and "whole" as they
 * are. */
static void window_text(char *buf, size_t size, const char *w)
{
	char *end;
	unsigned long long n = strtoull(w, &end, 10);

	if (end == w || *end != '\0' || n == 0)
		(void)snprintf(buf, size, "%s", w);
	else if (n % 3600 == 0)
		(void)snprintf(buf, size, "%lluh", n / 3600);
	else if (n % 60 == 0)
		(void)snprintf(buf, size, "%llum", n / 60);
	else
		(void)snprintf(buf, size, "%llus", n);
}

/* ---- counting ---------------------------------------------------------------- */

typedef struct {
	size_t total, done, failed, running, pending;
} counts;

/* A unit's status as shown: a live lease makes a unit that is not done
 * "running" (a failed unit being retried, too). */
static const char *shown_status(const faucet_backfill_unit_info *info, const live_lease *l)
{
	if (info->status == FAUCET_BACKFILL_DONE)
		return "done";
	if (l != NULL)
		return "running";
	return info->status == FAUCET_BACKFILL_FAILED ? "failed" : "pending";
}

static void count_units(const faucet_backfill_plan *p, const faucet_backfill_marker *m,
			const lease_set *ls, counts *c)
{
	memset(c, 0, sizeof(*c));
	c->total = faucet_backfill_plan_count(p);
	for (size_t i = 0; i < c->total; i++) {
		const char *id = faucet_backfill_plan_unit(p, i)->id;
		faucet_backfill_unit_info info;
		const char *st;

		if (m != NULL)
			(void)faucet_backfill_marker_unit_info(m, id, &info);
		else
			memset(&info, 0, sizeof(info));
		st = shown_status(&info, lease_of(ls, id));
		if (strcmp(st, "done") == 0)
			c->done++;
		else if (strcmp(st, "running") == 0)
			c->running++;
		else if (strcmp(st, "failed") == 0)
			c->failed++;
		else
			c->pending++;
	}
}

static void put_counts_json(faucet_buf *b, const counts *c)
{
	(void)faucet__buf_printf(b, "\"total\":%zu,\"done\":%zu,\"failed\":%zu,\"running\":%zu,"
				"\"pending\":%zu",
			     c->total, c->done, c->failed, c->running, c->pending);
}

/* ---- every backfill of a pipeline ------------------------------------------------ */

static int is_hash(const char *h)
{
	size_t n = 0;

	for (; h[n]; n++) {
		if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
			return 0;
	}
	return n == 16;
}

/* One marker's line (text) or object (JSON). */
static int overview_one(cli_context *ctx, faucet_store *s, const char *pipeline,
			const char *hash, const faucet_backfill_marker *m, int64_t now,
			faucet_buf *b, int first)
{
	faucet_backfill_plan *p = NULL;
	descriptor_parts d;
	lease_set ls;
	counts c;
	char window[32];
	const char *zone = faucet_backfill_marker_timezone(m);
	int rc;

	if (plan_of_marker(m, &p, &d) != 0) {
		free(d.buf);
		return cli_fail(CLI_EXIT_FAILED, "backfill %s", hash);
	}
	rc = load_leases(ctx, s, pipeline, hash, now, &ls);
	if (rc != 0) {
		faucet_backfill_plan_free(p);
		free(d.buf);
		return rc;
	}
	count_units(p, m, &ls, &c);
	window_text(window, sizeof(window), d.window);
	if (ctx->json) {
		(void)faucet__buf_puts(b, first ? "{" : ",{");
		cli_jw_member(b, "range_hash", 1);
		faucet__json_string(b, hash);
		cli_jw_member(b, "descriptor", 0);
		faucet__json_string(b, faucet_backfill_marker_descriptor(m));
		cli_jw_member(b, "from", 0);
		faucet__json_string(b, faucet_backfill_plan_from(p));
		cli_jw_member(b, "to", 0);
		faucet__json_string(b, faucet_backfill_plan_to(p));
		cli_jw_member(b, "window", 0);
		faucet__json_string(b, d.window);
		cli_jw_member(b, "timezone", 0);
		faucet__json_string(b, zone);
		cli_jw_member(b, "row", 0);
		faucet__json_string(b, d.row);
		(void)faucet__buf_putc(b, ',');
		put_counts_json(b, &c);
		cli_jw_member(b, "holders", 0);
		(void)faucet__buf_putc(b, '[');
		for (size_t i = 0; i < ls.count; i++) {
			if (i)
				(void)faucet__buf_putc(b, ',');
			faucet__json_string(b, ls.v[i].holder);
		}
		(void)faucet__buf_puts(b, "]}");
	} else {
		(void)faucet__buf_printf(b, "%s  %s/%s  window %s  zone %s  row %s  done %zu  "
					"failed %zu  running %zu  pending %zu  (of %zu)",
				     hash, faucet_backfill_plan_from(p), faucet_backfill_plan_to(p),
				     window, zone ? zone : "UTC (not recorded)", d.row, c.done,
				     c.failed, c.running, c.pending, c.total);
		for (size_t i = 0; i < ls.count; i++) {
			(void)faucet__buf_puts(b, i ? ", " : "  held by ");
			cli_escape(b, ls.v[i].holder);
		}
		(void)faucet__buf_putc(b, '\n');
	}
	leases_dispose(&ls);
	faucet_backfill_plan_free(p);
	free(d.buf);
	return 0;
}

static int overview(cli_context *ctx, faucet_store *s, const char *pipeline, faucet_buf *out)
{
	faucet_strarray keys = {NULL, 0};
	faucet_buf b = FAUCET_BUF_INIT;
	char *prefix = faucet__sprintf("%s::__backfill__::", pipeline);
	int64_t now = (int64_t)time(NULL);
	size_t shown = 0;
	int rc = 0;

	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the backfills of '%s' in %s", pipeline,
			      ctx->store_label);
		goto out;
	}
	if (ctx->json) {
		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "pipeline", 1);
		faucet__json_string(&b, pipeline);
		cli_jw_member(&b, "backfills", 0);
		(void)faucet__buf_putc(&b, '[');
	}
	for (size_t i = 0; i < keys.count && rc == 0; i++) {
		const char *hash = keys.strings[i] + strlen(prefix);
		faucet_backfill_marker *m = NULL;

		if (!is_hash(hash))
			continue;
		if (faucet_backfill_marker_load(s, keys.strings[i], &m) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot read the backfill marker");
			break;
		}
		if (m == NULL)
			continue;
		rc = overview_one(ctx, s, pipeline, hash, m, now, &b, shown == 0);
		shown++;
		faucet_backfill_marker_free(m);
	}
	if (rc == 0) {
		if (ctx->json) {
			(void)faucet__buf_puts(&b, "]}");
			if (out != NULL) {
				*out = b;
				b = (faucet_buf)FAUCET_BUF_INIT;
				rc = out->failed ? CLI_EXIT_FAILED : 0;
			} else {
				rc = cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
			}
		} else if (shown == 0) {
			printf("no backfill of '%s' in %s\n", pipeline, ctx->store_label);
		} else if (b.ptr != NULL) {
			fputs(b.ptr, stdout);
		}
	}
out:
	faucet__buf_dispose(&b);
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}

/* ---- a range asked for in another zone than it ran in ------------------------- */

/* The range's marker records `recorded`, the range was asked for in
 * `asked`: one line naming both (exit 2). */
static int zone_mismatch(const cli_backfill_status_args *a, const char *hash,
			 const char *recorded, const char *asked)
{
	return cli_error(CLI_EXIT_USAGE, "backfill status: the backfill of '%s' from %s to %s "
			 "(range hash %s) ran in time zone '%s', not '%s': give --timezone %s",
			 a->pipeline, a->range.from, a->range.to, hash, recorded, asked,
			 recorded);
}

/* No marker for the range in the zone asked for: is there one for the same
 * arguments planned in the zone some marker of the pipeline records?  (Bare
 * dates are local midnights, so another zone is another range and another
 * hash.)  0 when none is; otherwise the exit code, the mismatch printed. */
static int ran_in_other_zone(cli_context *ctx, faucet_store *s, const cli_backfill_status_args *a,
			     const char *asked)
{
	faucet_strarray keys = {NULL, 0};
	char *prefix = faucet__sprintf("%s::__backfill__::", a->pipeline);
	int rc = 0;

	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the backfills of '%s' in %s",
			      a->pipeline, ctx->store_label);
		goto out;
	}
	for (size_t i = 0; i < keys.count && rc == 0; i++) {
		const char *hash = keys.strings[i] + strlen(prefix), *zone;
		faucet_backfill_marker *m = NULL;
		faucet_backfill_plan *p = NULL;
		faucet_backfill_range r = a->range;

		if (!is_hash(hash))
			continue;
		if (faucet_backfill_marker_load(s, keys.strings[i], &m) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot read the backfill marker");
			break;
		}
		zone = m ? faucet_backfill_marker_timezone(m) : NULL;
		if (zone != NULL && strcmp(zone, asked) != 0) {
			r.timezone = zone;
			/* A zone this system cannot plan in is no match. */
			if (faucet_backfill_plan_new(&p, &r) == 0 &&
			    strcmp(faucet_backfill_plan_hash(p), hash) == 0 &&
			    strcmp(faucet_backfill_plan_descriptor(p),
				   faucet_backfill_marker_descriptor(m)) == 0)
				rc = zone_mismatch(a, hash, zone, asked);
			faucet_backfill_plan_free(p);
		}
		faucet_backfill_marker_free(m);
	}
out:
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}

/* ---- one range, unit by unit --------------------------------------------------------- */

static void unit_line(faucet_buf *b, const faucet_backfill_unit *u, const char *st,
		      const faucet_backfill_unit_info *info, const live_lease *l)
{
	char until[40];

	(void)faucet__buf_printf(b, "%s/%s  %-7s  attempts %u  started %s  ended %s", u->start,
			     u->end, st, info->attempts, info->started_at ? info->started_at : "-",
			     info->ended_at ? info->ended_at : "-");
	if (l != NULL && strcmp(st, "running") == 0) {
		(void)faucet_utc_text(l->expires_at, until, sizeof(until));
		(void)faucet__buf_puts(b, "  held by ");
		cli_escape(b, l->holder);
		(void)faucet__buf_printf(b, " until %s", until);
	}
	if (info->error != NULL && info->status == FAUCET_BACKFILL_FAILED) {
		(void)faucet__buf_puts(b, strcmp(st, "running") == 0 ? "  last error: " : "  ");
		cli_escape(b, info->error);
	}
	(void)faucet__buf_putc(b, '\n');
}

static void unit_json(faucet_buf *b, const faucet_backfill_unit *u, const char *st,
		      const faucet_backfill_unit_info *info, const live_lease *l, int first)
{
	char until[40];

	(void)faucet__buf_puts(b, first ? "{" : ",{");
	cli_jw_member(b, "unit", 1);
	faucet__json_string(b, u->id);
	cli_jw_member(b, "start", 0);
	faucet__json_string(b, u->start);
	cli_jw_member(b, "end", 0);
	faucet__json_string(b, u->end);
	cli_jw_member(b, "status", 0);
	faucet__json_string(b, st);
	cli_jw_member(b, "attempts", 0);
	(void)faucet__buf_printf(b, "%u", info->attempts);
	cli_jw_member(b, "started_at", 0);
	faucet__json_string(b, info->started_at);
	cli_jw_member(b, "ended_at", 0);
	faucet__json_string(b, info->ended_at);
	cli_jw_member(b, "error", 0);
	faucet__json_string(b, info->status == FAUCET_BACKFILL_FAILED ? info->error : NULL);
	cli_jw_member(b, "holder", 0);
	faucet__json_string(b, l ? l->holder : NULL);
	cli_jw_member(b, "lease_expires_at", 0);
	if (l != NULL) {
		(void)faucet_utc_text(l->expires_at, until, sizeof(until));
		faucet__json_string(b, until);
	} else {
		(void)faucet__buf_puts(b, "null");
	}
	(void)faucet__buf_putc(b, '}');
}

static int print_range(cli_context *ctx, const char *pipeline, const faucet_backfill_plan *p,
		       const faucet_backfill_marker *m, const lease_set *ls, const char *window,
		       const char *row, faucet_buf *out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	counts c;
	size_t n = faucet_backfill_plan_count(p);

	count_units(p, m, ls, &c);
	if (ctx->json) {
		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "pipeline", 1);
		faucet__json_string(&b, pipeline);
		cli_jw_member(&b, "range_hash", 0);
		faucet__json_string(&b, faucet_backfill_plan_hash(p));
		cli_jw_member(&b, "descriptor", 0);
		faucet__json_string(&b, faucet_backfill_plan_descriptor(p));
		cli_jw_member(&b, "from", 0);
		faucet__json_string(&b, faucet_backfill_plan_from(p));
		cli_jw_member(&b, "to", 0);
		faucet__json_string(&b, faucet_backfill_plan_to(p));
		cli_jw_member(&b, "window", 0);
		faucet__json_string(&b, window);
		cli_jw_member(&b, "timezone", 0);
		faucet__json_string(&b, faucet_backfill_plan_timezone(p));
		cli_jw_member(&b, "row", 0);
		faucet__json_string(&b, row);
		cli_jw_member(&b, "marker", 0);
		(void)faucet__buf_puts(&b, m ? "true," : "false,");
		put_counts_json(&b, &c);
		cli_jw_member(&b, "units", 0);
		(void)faucet__buf_putc(&b, '[');
	} else {
		char w[32];

		window_text(w, sizeof(w), window);
		(void)faucet__buf_printf(&b, "backfill %s %s: %s/%s, window %s, zone %s, row %s: "
					 "%zu unit(s): %zu done, %zu failed, %zu running, %zu pending%s\n",
				     pipeline, faucet_backfill_plan_hash(p), faucet_backfill_plan_from(p),
				     faucet_backfill_plan_to(p), w, faucet_backfill_plan_timezone(p), row,
				     c.total, c.done, c.failed, c.running, c.pending,
				     m ? "" : " (no marker: this range has not run)");
	}
	for (size_t i = 0; i < n; i++) {
		const faucet_backfill_unit *u = faucet_backfill_plan_unit(p, i);
		const live_lease *l = lease_of(ls, u->id);
		faucet_backfill_unit_info info;
		const char *st;

		if (m != NULL)
			(void)faucet_backfill_marker_unit_info(m, u->id, &info);
		else
			memset(&info, 0, sizeof(info));
		st = shown_status(&info, l);
		if (ctx->json)
			unit_json(&b, u, st, &info, l, i == 0);
		else
			unit_line(&b, u, st, &info, l);
	}
	if (ctx->json) {
		(void)faucet__buf_puts(&b, "]}");
		if (out != NULL) {
			*out = b;
			return out->failed ? CLI_EXIT_FAILED : 0;
		}
		return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
	}
	if (b.failed || b.ptr == NULL) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	fputs(b.ptr, stdout);
	faucet__buf_dispose(&b);
	return 0;
}

/* One range given by its boundaries (planned from the arguments) or by
 * its hash (planned from its marker). */
static int one_range(cli_context *ctx, faucet_store *s, const cli_backfill_status_args *a,
		     faucet_buf *out)
{
	faucet_backfill_plan *p = NULL;
	faucet_backfill_marker *m = NULL;
	descriptor_parts d = {NULL, NULL, NULL, NULL, NULL};
	lease_set ls = {NULL, 0, 0};
	char *key = NULL;
	const char *hash, *window, *row;
	int rc = 0;

	if (a->hash == NULL) {
		if (faucet_backfill_plan_new(&p, &a->range) != 0)
			return cli_plan_failed("backfill status", a->range.timezone);
		hash = faucet_backfill_plan_hash(p);
	} else {
		hash = a->hash;
	}
	key = faucet_backfill_marker_key(a->pipeline, hash);
	if (key == NULL) {
		rc = cli_error(CLI_EXIT_FAILED, "out of memory");
		goto out;
	}
	if (faucet_backfill_marker_load(s, key, &m) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot read the backfill marker");
		goto out;
	}
	if (p == NULL) {
		if (m == NULL) {
			rc = cli_error(CLI_EXIT_FAILED, "no backfill of '%s' with range hash %s "
				       "(no marker at %s in %s)", a->pipeline, hash, key,
				       ctx->store_label);
			goto out;
		}
		if (plan_of_marker(m, &p, &d) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "backfill %s", hash);
			goto out;
		}
		window = d.window;
		row = d.row;
	} else {
		/* The descriptor does not name the zone: RFC 3339 boundaries give
		 * the same hash in every zone, but calendar units and the times
		 * shown differ.  A marker that records no zone (the original's)
		 * cannot be checked. */
		const char *asked = faucet_backfill_plan_timezone(p);
		const char *recorded = m ? faucet_backfill_marker_timezone(m) : NULL;

		if (recorded != NULL && strcmp(recorded, asked) != 0) {
			rc = zone_mismatch(a, hash, recorded, asked);
			goto out;
		}
		if (m == NULL && (rc = ran_in_other_zone(ctx, s, a, asked)) != 0)
			goto out;
		if (split_descriptor(faucet_backfill_plan_descriptor(p), &d) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "backfill status");
			goto out;
		}
		window = d.window;
		row = d.row;
	}
	rc = load_leases(ctx, s, a->pipeline, hash, (int64_t)time(NULL), &ls);
	if (rc == 0)
		rc = print_range(ctx, a->pipeline, p, m, &ls, window, row, out);
out:
	leases_dispose(&ls);
	free(d.buf);
	free(key);
	faucet_backfill_marker_free(m);
	faucet_backfill_plan_free(p);
	return rc;
}

int cli_backfill_status(cli_context *ctx, const cli_backfill_status_args *a)
{
	cli_backfill_status_args scoped;
	const char *pipeline = a->pipeline;
	faucet_store *s = NULL;
	char *ns = NULL;
	int rc;

	if (a->pipeline == NULL)
		return cli_usage_error("backfill status",
				       "which pipeline? give -c FILE or --pipeline NAME");
	if ((rc = cli_pipeline_arg(ctx, "backfill status", &pipeline, a->tenant, 0, NULL)) != 0)
		return rc;
	if (a->hash != NULL && (a->range.from != NULL || a->range.to != NULL))
		return cli_usage_error("backfill status", "give either --hash or --from/--to");
	if (a->hash != NULL && !is_hash(a->hash))
		return cli_usage_error("backfill status", "--hash takes the 16 lower-case hex digits "
				       "of a range hash, not '%s'", a->hash);
	if ((a->range.from == NULL) != (a->range.to == NULL))
		return cli_usage_error("backfill status", "--from and --to go together");
	if (a->tenant != NULL) {
		/* Tenant T's pipeline P has its keys under T::P (the key builder's
		 * namespace), its markers at T::P::__backfill__::{hash}: read
		 * them as the pipeline "T::P". */
		faucet_key *k = NULL;

		if (faucet_key_new_pipeline(&k, a->pipeline) != 0 || faucet_key_set_tenant(k, a->tenant) != 0 ||
		    (ns = faucet_key_namespace(k)) == NULL) {
			faucet_key_free(k);
			return cli_error(CLI_EXIT_FAILED, "out of memory");
		}
		faucet_key_free(k);
		if (faucet_validate_key(ns) != 0) {
			rc = cli_usage_error("backfill status", "invalid tenant and pipeline '%s'", ns);
			free(ns);
			return rc;
		}
		scoped = *a;
		scoped.pipeline = ns;
		a = &scoped;
	}
	rc = cli_open_store_existing(ctx, &s);
	if (rc == 0) {
		if (a->hash != NULL || a->range.from != NULL)
			rc = one_range(ctx, s, a, NULL);
		else
			rc = overview(ctx, s, a->pipeline, NULL);
		faucet_store_free(s);
	}
	free(ns);
	return rc;
}

int cli_backfill_status_json(cli_context *ctx, faucet_store *s, const char *pipeline,
			     const char *hash, faucet_buf *out)
{
	cli_backfill_status_args a;
	cli_context jctx = *ctx;

	memset(&a, 0, sizeof(a));
	a.pipeline = pipeline;
	a.hash = hash;
	jctx.json = 1;
	if (hash != NULL && !is_hash(hash))
		return cli_error(CLI_EXIT_USAGE, "not a range hash: '%s'", hash);
	return hash != NULL ? one_range(&jctx, s, &a, out) : overview(&jctx, s, pipeline, out);
}

int cli_plan_failed(const char *command, const char *tz)
{
	char *best;
	int rc;

	if (tz == NULL || faucet_error_last()->code != FAUCET_ECONFIG ||
	    strstr(faucet_error_last()->message, "time zone") == NULL ||
	    (best = faucet__suggest_zone(tz)) == NULL)
		return cli_fail(CLI_EXIT_USAGE, "%s", command);
	rc = cli_error(CLI_EXIT_USAGE, "%s: %s (did you mean '%s'?)", command,
		       faucet_error_last()->message, best);
	free(best);
	return rc;
}
