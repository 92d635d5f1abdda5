/*
 * state_key.c - typed state keys: the builder, rendering under each key
 * scheme, legacy renderings and parsing.
 *
 * A key is held as its components, never as text, so it can be rendered
 * under any scheme: scheme 2 (current) passes a child invocation's raw
 * parent-key value through faucet_encode_component(); scheme 1 wrote it
 * verbatim.  faucet_key_legacy_renderings() lists what scheme 1 would have
 * written, which is where key migration looks for an old bookmark.
 *
 * A key built from an earlier rendering (faucet_key_new_from_rendered) has
 * no components of its own: it is that text, plus an optional shard and
 * suffix.  The component setters are ignored on such a key, as in the
 * original, so code that decorates "some key" need not care which kind it
 * holds.
 */
#include <stdlib.h>
#include <string.h>

#include "keys_internal.h"

typedef enum {
	SUB_NONE = 0,
	SUB_PARENT, /* a raw parent-key value, encoded on render (scheme 2) */
	SUB_ENCODED /* already in key form, rendered verbatim */
} sub_kind;

struct faucet_key {
	char *rendered; /* non-NULL: the key was built from this rendering */
	char *tenant;
	char *pipeline;
	char *row;
	sub_kind sub_kind;
	char *sub;
	char *shard;
	faucet_suffix_kind suffix;
	char *suffix_arg;
};

/* Replace *slot with a copy of value (NULL clears). */
static int set_string(char **slot, const char *value)
{
	char *copy = NULL;

	if (value != NULL) {
		copy = faucet__strdup(value);
		if (copy == NULL)
			return FAUCET_ENOMEM;
	}
	free(*slot);
	*slot = copy;
	return 0;
}

static int key_alloc(faucet_key **out, const char *what, const char *text)
{
	faucet_key *k;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s: out is NULL", what);
	*out = NULL;
	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s: NULL argument", what);
	k = faucet__calloc(1, sizeof(*k));
	if (k == NULL)
		return FAUCET_ENOMEM;
	*out = k;
	return 0;
}

int faucet_key_new_pipeline(faucet_key **out, const char *pipeline)
{
	int rc = key_alloc(out, "faucet_key_new_pipeline", pipeline);

	if (rc == 0 && set_string(&(*out)->pipeline, pipeline) != 0) {
		faucet_key_free(*out);
		*out = NULL;
		rc = FAUCET_ENOMEM;
	}
	return rc;
}

int faucet_key_new_invocation(faucet_key **out, const char *pipeline, const char *row)
{
	int rc;

	if (row == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_key_new_invocation: NULL row");
	}
	rc = faucet_key_new_pipeline(out, pipeline);
	if (rc == 0 && faucet_key_set_row(*out, row) != 0) {
		faucet_key_free(*out);
		*out = NULL;
		rc = FAUCET_ENOMEM;
	}
	return rc;
}

int faucet_key_new_from_rendered(faucet_key **out, const char *base)
{
	int rc = key_alloc(out, "faucet_key_new_from_rendered", base);

	if (rc == 0 && set_string(&(*out)->rendered, base) != 0) {
		faucet_key_free(*out);
		*out = NULL;
		rc = FAUCET_ENOMEM;
	}
	return rc;
}

void faucet_key_free(faucet_key *k)
{
	if (k == NULL)
		return;
	free(k->rendered);
	free(k->tenant);
	free(k->pipeline);
	free(k->row);
	free(k->sub);
	free(k->shard);
	free(k->suffix_arg);
	free(k);
}

/* ---- setters -------------------------------------------------------- */

static int null_key(const char *what)
{
	return faucet_error_set(FAUCET_EINVALID, "%s: key is NULL", what);
}

int faucet_key_set_tenant(faucet_key *k, const char *tenant)
{
	if (k == NULL)
		return null_key("faucet_key_set_tenant");
	return k->rendered ? 0 : set_string(&k->tenant, tenant);
}

int faucet_key_set_row(faucet_key *k, const char *row)
{
	if (k == NULL)
		return null_key("faucet_key_set_row");
	return k->rendered ? 0 : set_string(&k->row, row);
}

/* The parent key and an encoded sub share one slot: the last one set wins. */
static int set_sub(faucet_key *k, sub_kind kind, const char *value)
{
	int rc;

	if (k->rendered)
		return 0;
	rc = set_string(&k->sub, value);
	if (rc == 0)
		k->sub_kind = value ? kind : SUB_NONE;
	return rc;
}

int faucet_key_set_parent_key(faucet_key *k, const char *raw)
{
	if (k == NULL)
		return null_key("faucet_key_set_parent_key");
	return set_sub(k, SUB_PARENT, raw);
}

int faucet_key_set_sub(faucet_key *k, const char *encoded)
{
	if (k == NULL)
		return null_key("faucet_key_set_sub");
	return set_sub(k, SUB_ENCODED, encoded);
}

int faucet_key_set_shard(faucet_key *k, const char *shard)
{
	if (k == NULL)
		return null_key("faucet_key_set_shard");
	return set_string(&k->shard, shard);
}

int faucet_key_set_suffix(faucet_key *k, faucet_suffix_kind kind, const char *arg)
{
	int rc;

	if (k == NULL)
		return null_key("faucet_key_set_suffix");
	if (kind != FAUCET_SUFFIX_NONE && !faucet_suffix__known(kind))
		return faucet_error_set(FAUCET_EINVALID, "unknown key suffix kind %d", (int)kind);
	if (faucet_suffix__takes_arg(kind) && arg == NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"key suffix kind %d needs an argument (a run id or range hash)",
					(int)kind);
	rc = set_string(&k->suffix_arg, faucet_suffix__takes_arg(kind) ? arg : NULL);
	if (rc == 0)
		k->suffix = kind;
	return rc;
}

/* ---- accessors ------------------------------------------------------ */

const char *faucet_key_tenant(const faucet_key *k)
{
	return k && !k->rendered ? k->tenant : NULL;
}

const char *faucet_key_pipeline_name(const faucet_key *k)
{
	return k && !k->rendered ? k->pipeline : NULL;
}

const char *faucet_key_row(const faucet_key *k)
{
	return k && !k->rendered ? k->row : NULL;
}

const char *faucet_key_shard(const faucet_key *k)
{
	return k ? k->shard : NULL;
}

faucet_suffix_kind faucet_key_suffix(const faucet_key *k)
{
	return k ? k->suffix : FAUCET_SUFFIX_NONE;
}

const char *faucet_key_suffix_arg(const faucet_key *k)
{
	return k ? k->suffix_arg : NULL;
}

/* The sub component as scheme `version` renders it (caller frees). */
static char *render_sub(const faucet_key *k, unsigned version)
{
	if (k->sub_kind == SUB_PARENT && version >= 2)
		return faucet_encode_component(k->sub, 1);
	return faucet__strdup(k->sub);
}

char *faucet_key_sub(const faucet_key *k)
{
	if (k == NULL || k->rendered || k->sub_kind == SUB_NONE)
		return NULL;
	return render_sub(k, FAUCET_KEY_SCHEME_VERSION);
}

/* ---- rendering ------------------------------------------------------ */

static void push_namespace(faucet_buf *out, const faucet_key *k)
{
	if (k->rendered) {
		(void)faucet__buf_puts(out, k->rendered);
		return;
	}
	if (k->tenant)
		faucet_key__push(out, k->tenant);
	faucet_key__push(out, k->pipeline);
}

char *faucet_key_namespace(const faucet_key *k)
{
	faucet_buf buf = FAUCET_BUF_INIT;

	if (k == NULL)
		return NULL;
	push_namespace(&buf, k);
	return faucet__buf_detach(&buf);
}

char *faucet_key_render_scheme(const faucet_key *k, unsigned version)
{
	faucet_buf buf = FAUCET_BUF_INIT;

	if (k == NULL)
		return NULL;
	push_namespace(&buf, k);
	if (!k->rendered && k->row)
		faucet_key__push(&buf, k->row);
	if (!k->rendered && k->sub_kind != SUB_NONE) {
		char *sub = render_sub(k, version);
		if (sub == NULL) {
			faucet__buf_dispose(&buf);
			return NULL;
		}
		faucet_key__push(&buf, sub);
		free(sub);
	}
	if (k->shard)
		faucet_key__push(&buf, k->shard);
	faucet_suffix__push(&buf, k->suffix, k->suffix_arg);
	return faucet__buf_detach(&buf);
}

char *faucet_key_render(const faucet_key *k)
{
	return faucet_key_render_scheme(k, FAUCET_KEY_SCHEME_VERSION);
}

char *faucet_key_children_prefix(const faucet_key *k)
{
	char *rendered = faucet_key_render(k);
	char *prefix;

	if (rendered == NULL)
		return NULL;
	prefix = faucet__sprintf("%s" FAUCET_KEY_SEPARATOR, rendered);
	free(rendered);
	return prefix;
}

static int already_listed(const faucet_strarray *arr, const char *s)
{
	for (size_t i = 0; i < arr->count; i++) {
		if (strcmp(arr->strings[i], s) == 0)
			return 1;
	}
	return 0;
}

int faucet_key_legacy_renderings(const faucet_key *k, faucet_strarray *out)
{
	char *current;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_key_legacy_renderings: out is NULL");
	out->strings = NULL;
	out->count = 0;
	if (k == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_key_legacy_renderings: key is NULL");
	current = faucet_key_render(k);
	if (current == NULL)
		return FAUCET_ENOMEM;
	for (unsigned version = FAUCET_KEY_SCHEME_VERSION - 1; version >= 1; version--) {
		char *old = faucet_key_render_scheme(k, version);
		if (old == NULL) {
			free(current);
			faucet_strarray_dispose(out);
			return FAUCET_ENOMEM;
		}
		/* A rendering that is not a valid key was never stored: skip it. */
		if (strcmp(old, current) == 0 || already_listed(out, old) ||
		    faucet_validate_key(old) != 0) {
			free(old);
			continue;
		}
		if (faucet__strarray_push_owned(out, old) != 0) {
			free(current);
			faucet_strarray_dispose(out);
			return FAUCET_ENOMEM;
		}
	}
	free(current);
	faucet_error_clear(); /* a skipped invalid rendering is not a failure */
	return 0;
}

/* ---- parsing -------------------------------------------------------- */

/* One "::"-separated segment of a key, pointing into the key text. */
typedef struct {
	const char *p;
	size_t len;
} segment;

/* Split like Rust's str::split("::"): left to right, non-overlapping, so
 * "a:::b" gives "a" and ":b".  `segs` has room for strlen(text)/2 + 1. */
static size_t split_segments(const char *text, segment *segs)
{
	size_t n = 0;
	const char *p = text, *sep;

	while ((sep = strstr(p, FAUCET_KEY_SEPARATOR)) != NULL) {
		segs[n].p = p;
		segs[n++].len = (size_t)(sep - p);
		p = sep + 2;
	}
	segs[n].p = p;
	segs[n++].len = strlen(p);
	return n;
}

static int seg_is(const segment *s, const char *word)
{
	return s->len == strlen(word) && memcmp(s->p, word, s->len) == 0;
}

/* segs[from..to) joined by "::" again: the segments are contiguous in the
 * key text, so this is just the span from the first to the end of the last. */
static char *join_segments(const segment *segs, size_t from, size_t to)
{
	const char *start = segs[from].p, *end = segs[to - 1].p + segs[to - 1].len;
	return faucet__strndup(start, (size_t)(end - start));
}

/* A pipeline-level marker as the whole remainder: __replication__ alone,
 * or __backfill__ / __serve_backfill__ followed by the range hash. */
static faucet_suffix_kind pipeline_level_marker(const segment *segs, size_t n)
{
	if (seg_is(&segs[0], "__replication__") && n == 1)
		return FAUCET_SUFFIX_REPLICATION;
	if (seg_is(&segs[0], "__backfill__") && n > 1)
		return FAUCET_SUFFIX_BACKFILL;
	if (seg_is(&segs[0], "__serve_backfill__") && n > 1)
		return FAUCET_SUFFIX_SERVE_BACKFILL;
	return FAUCET_SUFFIX_NONE;
}

/* The invocation-level marker at segs[i], if it is one there.  The
 * single-segment markers count only as the last segment; __rollback__ is
 * the index when last and a run marker when followed by the run id. */
static faucet_suffix_kind invocation_marker(const segment *segs, size_t i, size_t n)
{
	int last = i + 1 == n;

	if (seg_is(&segs[i], "__sla__") && last)
		return FAUCET_SUFFIX_SLA;
	if (seg_is(&segs[i], "__profiling__") && last)
		return FAUCET_SUFFIX_PROFILING;
	if (seg_is(&segs[i], "__status__") && last)
		return FAUCET_SUFFIX_STATUS;
	if (seg_is(&segs[i], "__lease__") && last)
		return FAUCET_SUFFIX_LEASE;
	if (seg_is(&segs[i], "__rollback__"))
		return last ? FAUCET_SUFFIX_ROLLBACK_INDEX : FAUCET_SUFFIX_ROLLBACK_RUN;
	return FAUCET_SUFFIX_NONE;
}

/* Set a component from segs[from..to), taking the joined copy. */
static int set_joined(faucet_key *k, int (*setter)(faucet_key *, const char *),
		      const segment *segs, size_t from, size_t to)
{
	char *text = join_segments(segs, from, to);
	int rc;

	if (text == NULL)
		return FAUCET_ENOMEM;
	rc = setter(k, text);
	free(text);
	return rc;
}

static int set_suffix_joined(faucet_key *k, faucet_suffix_kind kind, const segment *segs,
			     size_t from, size_t n)
{
	char *arg = NULL;
	int rc;

	if (faucet_suffix__takes_arg(kind)) {
		arg = join_segments(segs, from, n);
		if (arg == NULL)
			return FAUCET_ENOMEM;
	}
	rc = faucet_key_set_suffix(k, kind, arg);
	free(arg);
	return rc;
}

/* Fill k (a bare namespace key) from the segments after the namespace. */
static int decode_segments(faucet_key *k, const segment *segs, size_t n)
{
	faucet_suffix_kind kind = pipeline_level_marker(segs, n);
	size_t end = n, row_end = 1;
	int rc;

	if (kind != FAUCET_SUFFIX_NONE)
		return set_suffix_joined(k, kind, segs, 1, n);
	for (size_t i = 1; i < n; i++) {
		kind = invocation_marker(segs, i, n);
		if (kind != FAUCET_SUFFIX_NONE) {
			end = i;
			break;
		}
	}
	/* A backfill unit's row spans backfill::{range hash}::{unit}. */
	if (seg_is(&segs[0], "backfill") && end > 1)
		row_end = end;
	rc = set_joined(k, faucet_key_set_row, segs, 0, row_end);
	if (rc == 0 && end > row_end)
		rc = set_joined(k, faucet_key_set_sub, segs, row_end, end);
	if (rc == 0 && kind != FAUCET_SUFFIX_NONE)
		rc = set_suffix_joined(k, kind, segs, end + 1, n);
	return rc;
}

/* Where the part after "{namespace}::" starts in key, or NULL when the key
 * is not inside the namespace. */
static const char *after_namespace(const faucet_key *ns_key, const char *key, int *rc)
{
	char *ns = faucet_key_namespace(ns_key);
	size_t len;
	const char *rest = NULL;

	*rc = 0;
	if (ns == NULL) {
		*rc = FAUCET_ENOMEM;
		return NULL;
	}
	len = strlen(ns);
	if (strncmp(key, ns, len) == 0 && strncmp(key + len, FAUCET_KEY_SEPARATOR, 2) == 0)
		rest = key + len + 2;
	free(ns);
	return rest;
}

int faucet_key_parse(faucet_key **out, const char *tenant, const char *pipeline, const char *key)
{
	faucet_key *k = NULL;
	segment *segs;
	const char *rest;
	size_t n;
	int rc;

	if (out == NULL || pipeline == NULL || key == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_key_parse: NULL argument");
	}
	*out = NULL;
	rc = faucet_key_new_pipeline(&k, pipeline);
	if (rc == 0)
		rc = faucet_key_set_tenant(k, tenant);
	if (rc != 0) {
		faucet_key_free(k);
		return rc;
	}
	rest = after_namespace(k, key, &rc);
	if (rest == NULL || *rest == '\0') {
		faucet_key_free(k);
		if (rc != 0)
			return rc;
		return faucet_error_set(FAUCET_ENOTFOUND,
					"state key '%s' is not inside the namespace of pipeline '%s'",
					key, pipeline);
	}
	segs = faucet__calloc(strlen(rest) / 2 + 1, sizeof(*segs));
	if (segs == NULL) {
		faucet_key_free(k);
		return FAUCET_ENOMEM;
	}
	n = split_segments(rest, segs);
	rc = decode_segments(k, segs, n);
	free(segs);
	if (rc != 0) {
		faucet_key_free(k);
		return rc;
	}
	*out = k;
	return 0;
}
