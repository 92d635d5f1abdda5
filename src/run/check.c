/*
 * check.c - doctor's "run documents" probe: every run bookkeeping key of a
 * store read and parsed as its kind, and `doctor --repair` setting the
 * broken ones aside.
 *
 * A bookkeeping key holding something faucet cannot read stops every later
 * write of its row ("not a faucet run status document"), and no command may
 * write or delete it (doc/design.md §8.9), so doctor is where it is found and
 * cleared.  Clearing never deletes: the value moves to a set-aside key (see
 * faucet_run__broken_key) that is neither bookkeeping nor a run document, and only
 * then is the broken key removed, with compare-and-delete against the exact
 * value moved, so a document someone fixed meanwhile is kept.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run_internal.h"
#include "keys/bookkeeping.h"
#include <faucet/check.h>
#include <faucet/keys.h>

#define PROBE_NAME "run documents"
#define BROKEN_SEGMENT "__broken__"
#define SET_ASIDE_TRIES 100 /* suffixes .2 .. .100 when the name is taken */
#define ERROR_SHOWN_MAX 300 /* bytes of one parse error in the probe's text */

/* ---- what a bookkeeping key is ------------------------------------------------- */

typedef enum { DOC_LEASE, DOC_STATUS, DOC_INDEX, DOC_MARKER, DOC_UNKNOWN } doc_kind;

static int seg_is(const char *seg, size_t len, const char *name)
{
	return strlen(name) == len && memcmp(seg, name, len) == 0;
}

/*
 * The kind of bookkeeping key `key` is, found the way faucet__is_bookkeeping_key
 * finds it: the first "__rollback__" segment after the pipeline, or a last
 * "__lease__" / "__status__" segment.  *mark receives the offset of the "::"
 * before that segment (what precedes it is the scope); *run the marker's
 * run segment (DOC_MARKER only), with a part's number after it when the key
 * is a marker's part ("{marker}::{n}", n > 0 in decimal digits: *part set).
 * -1 when the key is not bookkeeping.
 */
/* A marker part's number: decimal digits, no leading zero, not 0. */
static int is_part_number(const char *s)
{
	if (*s < '1' || *s > '9')
		return 0;
	while (*s >= '0' && *s <= '9')
		s++;
	return *s == '\0';
}

static int kind_of(const char *key, size_t *mark, const char **run, int *part)
{
	const char *p = strstr(key, "::");

	*run = NULL;
	*part = 0;
	while (p != NULL) {
		const char *seg = p + 2, *end = strstr(seg, "::");
		size_t len = end ? (size_t)(end - seg) : strlen(seg);

		*mark = (size_t)(p - key);
		if (seg_is(seg, len, "__rollback__")) {
			if (end == NULL)
				return DOC_INDEX;
			*run = end + 2;
			if ((end = strstr(end + 2, "::")) == NULL)
				return DOC_MARKER;
			if (is_part_number(end + 2)) {
				*part = 1;
				return DOC_MARKER;
			}
			return DOC_UNKNOWN;
		}
		if (end == NULL && seg_is(seg, len, "__lease__"))
			return DOC_LEASE;
		if (end == NULL && seg_is(seg, len, "__status__"))
			return DOC_STATUS;
		p = end;
	}
	return -1;
}

/* 0 when v parses as its key's kind; FAUCET_ENOMEM; any other code with
 * the last error saying why it does not. */
static int parse_as_kind(const char *key, const faucet_value *v)
{
	const char *run;
	size_t mark;
	int rc, part;

	switch (kind_of(key, &mark, &run, &part)) {
	case DOC_LEASE: {
		faucet_lease l;
		rc = faucet_lease_parse(v, key, &l);
		faucet_lease_dispose(&l);
		return rc;
	}
	case DOC_STATUS: {
		run_status st;
		rc = faucet_run__status_parse(v, key, &st);
		faucet_run__status_dispose(&st);
		return rc;
	}
	case DOC_INDEX: {
		faucet_strarray runs;
		rc = faucet_run__index_parse(v, key, &runs);
		faucet_strarray_dispose(&runs);
		return rc;
	}
	case DOC_MARKER: {
		/* A part names its run before its number. */
		char *id = part ? faucet__strndup(run, (size_t)(strstr(run, "::") - run)) : NULL;
		run_marker m;

		if (part && id == NULL)
			return FAUCET_ENOMEM;
		rc = faucet_run__marker_parse(v, key, part ? id : run, &m);
		faucet_run__marker_dispose(&m);
		free(id);
		return rc;
	}
	default:
		return faucet_error_set(FAUCET_ERROR,
					"%s is a bookkeeping key of no shape faucet writes "
					"(__rollback__ is followed by at most a run id and a part number)",
					key);
	}
}

/* ---- the set-aside name ----------------------------------------------------------- */

/* Append one segment of the bookkeeping part with its leading and trailing
 * underscores taken off ("__rollback__" -> "rollback"), so that no segment
 * of the set-aside name is a bookkeeping one. */
static void put_stripped(faucet_buf *b, const char *seg, size_t len)
{
	while (len > 0 && seg[0] == '_') {
		seg++;
		len--;
	}
	while (len > 0 && seg[len - 1] == '_')
		len--;
	if (len == 0)
		(void)faucet__buf_putc(b, 'x');
	else
		(void)faucet__buf_printf(b, "%.*s", (int)len, seg);
}

char *faucet_run__broken_key(const char *key, int64_t now, unsigned attempt)
{
	char stamp[32], tail[48];
	time_t t = (time_t)now;
	struct tm tm;
	const char *run;
	size_t mark = 0;
	int part;
	faucet_buf b = FAUCET_BUF_INIT;

	if (key == NULL || kind_of(key, &mark, &run, &part) < 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
		return NULL;
	if (attempt > 1)
		(void)snprintf(tail, sizeof(tail), "%s.%u", stamp, attempt);
	else
		(void)snprintf(tail, sizeof(tail), "%s", stamp);
	/* {scope}::__broken__::{bookkeeping part, underscores off}::{stamp} */
	(void)faucet__buf_printf(&b, "%.*s::" BROKEN_SEGMENT, (int)mark, key);
	for (const char *p = key + mark; p != NULL;) {
		const char *seg = p + 2, *end = strstr(seg, "::");

		(void)faucet__buf_puts(&b, "::");
		put_stripped(&b, seg, end ? (size_t)(end - seg) : strlen(seg));
		p = end;
	}
	(void)faucet__buf_printf(&b, "::%s", tail);
	/* Too long for a key: the scope and the stamp only, then the stamp
	 * under a first segment of its own (never bookkeeping: that needs a
	 * segment after the first). */
	if (!b.failed && b.len > FAUCET_KEY_MAX) {
		b.len = 0;
		(void)faucet__buf_printf(&b, "%.*s::" BROKEN_SEGMENT "::%s", (int)mark, key, tail);
	}
	if (!b.failed && b.len > FAUCET_KEY_MAX) {
		b.len = 0;
		(void)faucet__buf_printf(&b, BROKEN_SEGMENT "::%s", tail);
	}
	if (b.failed) {
		faucet__buf_dispose(&b);
		return NULL;
	}
	return b.ptr;
}

/* ---- finding and checking -------------------------------------------------------- */

typedef struct {
	char *key;
	char *error;       /* why it does not parse */
	faucet_value *value; /* what was read (kept for the repair) */
	char *moved_to;    /* repair: where it went (NULL = not moved) */
	char *repair_error; /* repair: why it could not be moved */
	int changed;       /* repair: changed meanwhile, left as it is */
} broken_doc;

typedef struct {
	faucet_strarray keys;   /* the bookkeeping keys found */
	uint64_t deadline_ms;   /* 0 = none */
	int timed_out;
	broken_doc *broken;
	size_t nbroken, cap;
	size_t checked;
} doc_scan;

#define SCAN_TIMED_OUT 1

static int past(uint64_t deadline_ms)
{
	return deadline_ms != 0 && faucet__now_ms() > deadline_ms;
}

static int collect_key(const char *key, void *ctx)
{
	doc_scan *scan = ctx;

	if (past(scan->deadline_ms))
		return SCAN_TIMED_OUT;
	if (!faucet__is_bookkeeping_key(key))
		return 0;
	return faucet__strarray_push(&scan->keys, key) == 0 ? 0 : FAUCET_ENOMEM;
}

static void broken_dispose(broken_doc *d)
{
	free(d->key);
	free(d->error);
	faucet_value_free(d->value);
	free(d->moved_to);
	free(d->repair_error);
}

static void scan_dispose(doc_scan *scan)
{
	for (size_t i = 0; i < scan->nbroken; i++)
		broken_dispose(&scan->broken[i]);
	free(scan->broken);
	faucet_strarray_dispose(&scan->keys);
}

/* Record `key` as broken, taking `v`. */
static int add_broken(doc_scan *scan, const char *key, faucet_value *v, const char *why)
{
	broken_doc *grown, *d;

	grown = faucet__reserve(scan->broken, &scan->cap, scan->nbroken + 1,
				sizeof(*scan->broken), 4);
	if (grown == NULL) {
		faucet_value_free(v);
		return FAUCET_ENOMEM;
	}
	scan->broken = grown;
	d = &scan->broken[scan->nbroken];
	memset(d, 0, sizeof(*d));
	d->key = faucet__strdup(key);
	d->error = faucet__strdup(why);
	d->value = v;
	if (d->key == NULL || d->error == NULL) {
		broken_dispose(d);
		return FAUCET_ENOMEM;
	}
	scan->nbroken++;
	return 0;
}

/* Read and parse every key found.  A store error stops the check (it is
 * the probe's outcome); a document that does not parse is recorded. */
static int check_all(faucet_store *s, doc_scan *scan)
{
	for (size_t i = 0; i < scan->keys.count; i++) {
		const char *key = scan->keys.strings[i];
		faucet_value *v = NULL;
		int rc;

		if (past(scan->deadline_ms)) {
			scan->timed_out = 1;
			return 0;
		}
		if ((rc = faucet_store_get(s, key, &v)) != 0)
			return rc;
		if (v == NULL)
			continue; /* gone since the listing */
		scan->checked++;
		rc = parse_as_kind(key, v);
		if (rc == FAUCET_ENOMEM) {
			faucet_value_free(v);
			return rc;
		}
		if (rc == 0) {
			faucet_value_free(v);
			continue;
		}
		if ((rc = add_broken(scan, key, v, faucet_error_last()->message)) != 0)
			return rc;
	}
	return 0;
}

/* ---- the repair --------------------------------------------------------------------- */

static int note_repair_error(broken_doc *d, const char *what)
{
	d->repair_error = faucet__sprintf("%s: %s", what, faucet_error_last()->message);
	return d->repair_error ? 0 : FAUCET_ENOMEM;
}

/*
 * Move one broken document aside: its value put at a fresh set-aside key
 * (compare-and-put against "absent": an earlier repair's copy is never
 * overwritten), then the broken key removed with compare-and-delete
 * against that value.  When the key changed meanwhile, the copy is taken
 * back the same way and the key left to whoever changed it.  Only memory
 * running out is returned; every other failure is recorded in d.
 */
static int set_aside(faucet_store *s, int64_t now, broken_doc *d)
{
	char *to = NULL;
	int written = 0, deleted = 0;

	for (unsigned attempt = 1; attempt <= SET_ASIDE_TRIES && !written; attempt++) {
		free(to);
		to = faucet_run__broken_key(d->key, now, attempt);
		if (to == NULL)
			return FAUCET_ENOMEM;
		if (faucet_validate_key(to) != 0) { /* cannot happen: a safety stop */
			int rc = note_repair_error(d, "no valid set-aside name");
			free(to);
			return rc;
		}
		if (faucet_store_compare_and_put(s, to, NULL, d->value, &written) != 0) {
			int rc = note_repair_error(d, "cannot write its set-aside copy");
			free(to);
			return rc;
		}
	}
	if (!written) {
		free(to);
		d->repair_error = faucet__sprintf("every set-aside name it could have is taken");
		return d->repair_error ? 0 : FAUCET_ENOMEM;
	}
	if (faucet_store_compare_and_delete(s, d->key, d->value, &deleted) != 0) {
		/* The outcome may be unknown: keep the copy, which holds the
		 * value whatever happened to the key. */
		int rc = note_repair_error(d, "copied, but the key could not be removed");
		if (rc == 0) {
			char *both = faucet__sprintf("%s (its copy is at %s)", d->repair_error, to);
			free(d->repair_error);
			d->repair_error = both;
			rc = both ? 0 : FAUCET_ENOMEM;
		}
		free(to);
		return rc;
	}
	if (!deleted) {
		int gone = 0;
		/* Changed (or removed) meanwhile: the copy goes again. */
		if (faucet_store_compare_and_delete(s, to, d->value, &gone) != 0 || !gone) {
			d->moved_to = to;
			d->changed = 1;
			return 0;
		}
		free(to);
		d->changed = 1;
		return 0;
	}
	d->moved_to = to;
	return 0;
}

/* ---- the probe ---------------------------------------------------------------------- */

static void put_error(faucet_buf *b, const char *error)
{
	size_t len = strlen(error);

	if (len <= ERROR_SHOWN_MAX)
		(void)faucet__buf_puts(b, error);
	else
		(void)faucet__buf_printf(b, "%.*s...", ERROR_SHOWN_MAX, error);
}

static int report_text(faucet_check_report *r, faucet_probe_status st, faucet_buf *reason,
		       faucet_buf *hint, uint64_t elapsed)
{
	int rc;

	if (reason->failed || hint->failed)
		rc = FAUCET_ENOMEM;
	else
		rc = faucet_check_report_add(r, PROBE_NAME, st, reason->len ? reason->ptr : NULL,
					     elapsed, hint->len ? hint->ptr : NULL);
	faucet__buf_dispose(reason);
	faucet__buf_dispose(hint);
	return rc;
}

/* The probe from a finished check (and repair). */
static int verdict(faucet_check_report *r, const doc_scan *scan, int repair, uint64_t elapsed)
{
	faucet_buf reason = FAUCET_BUF_INIT, hint = FAUCET_BUF_INIT;
	size_t failed = 0, moved = 0, changed = 0;

	if (scan->nbroken == 0 && scan->timed_out) {
		(void)faucet__buf_printf(&reason, "ran out of time after %zu of %zu run documents",
					scan->checked, scan->keys.count);
		return report_text(r, FAUCET_PROBE_SKIP, &reason, &hint, elapsed);
	}
	if (scan->nbroken == 0)
		return report_text(r, FAUCET_PROBE_PASS, &reason, &hint, elapsed);
	if (!repair) {
		(void)faucet__buf_printf(&reason, "%zu run document%s of %zu do%s not parse: ",
					scan->nbroken, scan->nbroken == 1 ? "" : "s",
					scan->checked, scan->nbroken == 1 ? "es" : "");
		for (size_t i = 0; i < scan->nbroken; i++) {
			const broken_doc *d = &scan->broken[i];

			(void)faucet__buf_puts(&reason, i ? "; " : "");
			/* The parsers' messages name the key; say it if one did not. */
			if (strstr(d->error, d->key) == NULL)
				(void)faucet__buf_printf(&reason, "%s: ", d->key);
			put_error(&reason, d->error);
		}
		if (scan->timed_out)
			(void)faucet__buf_printf(&reason, " (ran out of time after %zu of %zu)",
						scan->checked, scan->keys.count);
		(void)faucet__buf_puts(&hint,
				      "their rows cannot be written until they are cleared: "
				      "`faucet doctor --repair` sets each aside under "
				      "{scope}::" BROKEN_SEGMENT "::... (never deletes it)");
		return report_text(r, FAUCET_PROBE_FAIL, &reason, &hint, elapsed);
	}
	for (size_t i = 0; i < scan->nbroken; i++) {
		const broken_doc *d = &scan->broken[i];

		if (d->repair_error != NULL) {
			(void)faucet__buf_printf(&reason, "%scannot set %s aside: ",
						failed++ ? "; " : "", d->key);
			put_error(&reason, d->repair_error);
		} else if (d->changed) {
			(void)faucet__buf_printf(&hint, "%s%s changed while being set aside, left as "
						"it is",
						(moved + changed++) ? "; " : "", d->key);
			if (d->moved_to != NULL)
				(void)faucet__buf_printf(&hint, " (a copy of what it held is at %s)",
							d->moved_to);
		} else {
			(void)faucet__buf_printf(&hint, "%sset aside %s as %s", (moved++ + changed) ? "; " : "",
						d->key, d->moved_to);
		}
	}
	if (failed == 0 && scan->timed_out)
		(void)faucet__buf_printf(&reason, "ran out of time after %zu of %zu run documents",
					scan->checked, scan->keys.count);
	/* Set aside: nothing is left to look at, so a pass that says what it
	 * did (as the temp files' repair does). */
	return report_text(r, failed ? FAUCET_PROBE_FAIL
				     : scan->timed_out ? FAUCET_PROBE_SKIP : FAUCET_PROBE_PASS,
			   &reason, &hint, elapsed);
}

int faucet_run_documents_probe(faucet_store *s, int64_t now, unsigned flags, uint64_t timeout_ms,
			       faucet_check_report *report)
{
	uint64_t start = faucet__now_ms();
	int repair = (flags & FAUCET_CHECK_REPAIR) != 0;
	doc_scan scan;
	int rc;

	if (s == NULL || report == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_documents_probe: NULL argument");
	if (!faucet_store_supports_list(s))
		return faucet_check_report_add(report, PROBE_NAME, FAUCET_PROBE_SKIP,
					       "this state store cannot enumerate its keys", 0, NULL);
	memset(&scan, 0, sizeof(scan));
	scan.deadline_ms = timeout_ms ? start + timeout_ms : 0;
	rc = faucet_store_scan(s, "", collect_key, &scan);
	if (rc == SCAN_TIMED_OUT) {
		scan.timed_out = 1;
		rc = 0;
	}
	if (rc == 0)
		rc = check_all(s, &scan);
	for (size_t i = 0; rc == 0 && repair && i < scan.nbroken; i++) {
		if (past(scan.deadline_ms)) {
			scan.timed_out = 1;
			scan.broken[i].repair_error = faucet__strdup("ran out of time before it");
			rc = scan.broken[i].repair_error ? 0 : FAUCET_ENOMEM;
			continue;
		}
		rc = set_aside(s, now, &scan.broken[i]);
	}
	if (rc == FAUCET_ENOMEM) {
		scan_dispose(&scan);
		return rc;
	}
	if (rc != 0) {
		char *why = faucet__sprintf("cannot read the run documents: %s",
					    faucet_error_last()->message);
		rc = why ? faucet_check_report_add(report, PROBE_NAME, FAUCET_PROBE_FAIL, why,
						   faucet__now_ms() - start, NULL)
			 : FAUCET_ENOMEM;
		free(why);
		scan_dispose(&scan);
		return rc;
	}
	rc = verdict(report, &scan, repair, faucet__now_ms() - start);
	scan_dispose(&scan);
	return rc;
}
