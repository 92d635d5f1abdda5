/*
 * encode.c - turning raw values into key components, and the small fixed
 * renderings every module shares (suffix markers, backfill unit rows, the
 * pipeline namespace prefix).
 *
 * encode_component must give the same answer as the original faucet for
 * every input, because its output is part of stored keys: a different
 * encoding would make an existing bookmark invisible.  The rule: a value
 * that is already safe as a key component is kept; anything else becomes a
 * readable prefix of its plain characters, ".h", and the FNV-1a 64 hash of
 * the raw bytes in 16 lower-case hex digits.
 */
#include <stdlib.h>
#include <string.h>

#include "keys_internal.h"

#define READABLE_MAX 32 /* plain characters kept in front of a hashed component */

/* Characters a component may hold anywhere. */
static int plain_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

static int legal_char(unsigned char c, int allow_separators)
{
	return plain_char(c) || (allow_separators && (c == ':' || c == '/'));
}

/* Whether every '/' is followed by a segment a key accepts: not empty and
 * not starting with a dot.  The text before a component is never empty
 * ("{row}::"), so only what follows each '/' needs checking. */
static int slashes_separate_segments(const char *raw, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (raw[i] == '/' && (i + 1 == len || raw[i + 1] == '/' || raw[i + 1] == '.'))
			return 0;
	}
	return 1;
}

static int component_kept_verbatim(const char *raw, size_t len, int allow_separators)
{
	if (len == 0 || len > FAUCET_COMPONENT_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!legal_char((unsigned char)raw[i], allow_separators))
			return 0;
	}
	/* The original keeps "a/", "a//b" and "a/.b" verbatim, which makes the
	 * whole key invalid, so no bookmark can exist under such a key: hashing
	 * them instead loses nothing and keeps the output a valid component. */
	return strstr(raw, FAUCET_KEY_SEPARATOR) == NULL && raw[0] != ':' && raw[len - 1] != ':' &&
	       slashes_separate_segments(raw, len);
}

char *faucet_encode_component(const char *raw, int allow_separators)
{
	char readable[READABLE_MAX + 1];
	size_t len, kept = 0;

	if (raw == NULL)
		raw = "";
	len = strlen(raw);
	if (component_kept_verbatim(raw, len, allow_separators))
		return faucet__strndup(raw, len);
	/* The original walks Unicode characters and keeps the plain ones.  Every
	 * plain character is ASCII, and every byte of a multi-byte UTF-8
	 * character is >= 0x80, so walking bytes keeps exactly the same ones. */
	for (size_t i = 0; i < len && kept < READABLE_MAX; i++) {
		if (plain_char((unsigned char)raw[i]))
			readable[kept++] = raw[i];
	}
	readable[kept] = '\0';
	return faucet__sprintf("%s.h%016llx", readable, faucet_fnv1a64(raw, len));
}

char *faucet_backfill_unit_row(const char *range_hash, const char *unit)
{
	if (range_hash == NULL || unit == NULL) {
		(void)faucet_error_set(FAUCET_EINVALID, "backfill unit row: NULL argument");
		return NULL;
	}
	return faucet__sprintf("backfill" FAUCET_KEY_SEPARATOR "%s" FAUCET_KEY_SEPARATOR "%s",
			       range_hash, unit);
}

char *faucet_namespace_prefix(const char *pipeline)
{
	if (pipeline == NULL) {
		(void)faucet_error_set(FAUCET_EINVALID, "namespace prefix: NULL pipeline");
		return NULL;
	}
	return faucet__sprintf("%s" FAUCET_KEY_SEPARATOR, pipeline);
}

/* ---- suffix markers ------------------------------------------------- */

/* The marker segment of a suffix kind, and whether it carries an argument
 * segment after it.  NULL for FAUCET_SUFFIX_NONE and unknown kinds. */
static const char *suffix_marker(faucet_suffix_kind kind, int *has_arg)
{
	*has_arg = 0;
	switch (kind) {
	case FAUCET_SUFFIX_SLA:
		return "__sla__";
	case FAUCET_SUFFIX_PROFILING:
		return "__profiling__";
	case FAUCET_SUFFIX_ROLLBACK_INDEX:
		return "__rollback__";
	case FAUCET_SUFFIX_ROLLBACK_RUN:
		*has_arg = 1;
		return "__rollback__";
	case FAUCET_SUFFIX_STATUS:
		return "__status__";
	case FAUCET_SUFFIX_LEASE:
		return "__lease__";
	case FAUCET_SUFFIX_REPLICATION:
		return "__replication__";
	case FAUCET_SUFFIX_BACKFILL:
		*has_arg = 1;
		return "__backfill__";
	case FAUCET_SUFFIX_SERVE_BACKFILL:
		*has_arg = 1;
		return "__serve_backfill__";
	case FAUCET_SUFFIX_NONE:
		break;
	}
	return NULL;
}

int faucet_suffix_is_pipeline_level(faucet_suffix_kind kind)
{
	return kind == FAUCET_SUFFIX_REPLICATION || kind == FAUCET_SUFFIX_BACKFILL ||
	       kind == FAUCET_SUFFIX_SERVE_BACKFILL;
}

int faucet_suffix__takes_arg(faucet_suffix_kind kind)
{
	int has_arg;
	return suffix_marker(kind, &has_arg) != NULL && has_arg;
}

int faucet_suffix__known(faucet_suffix_kind kind)
{
	int has_arg;
	return suffix_marker(kind, &has_arg) != NULL;
}

void faucet_key__push(faucet_buf *out, const char *segment)
{
	if (out->len > 0)
		(void)faucet__buf_puts(out, FAUCET_KEY_SEPARATOR);
	(void)faucet__buf_puts(out, segment);
}

void faucet_suffix__push(faucet_buf *out, faucet_suffix_kind kind, const char *arg)
{
	int has_arg;
	const char *marker = suffix_marker(kind, &has_arg);

	if (marker == NULL)
		return;
	faucet_key__push(out, marker);
	if (has_arg)
		faucet_key__push(out, arg ? arg : "");
}

char *faucet_suffix_render(faucet_suffix_kind kind, const char *arg)
{
	faucet_buf buf = FAUCET_BUF_INIT;

	faucet_suffix__push(&buf, kind, arg);
	return faucet__buf_detach(&buf);
}

char *faucet_suffix_tail(faucet_suffix_kind kind, const char *arg)
{
	char *rendered, *tail;

	if (!faucet_suffix__known(kind))
		return faucet__strdup(""); /* no suffix ends a key with nothing */
	rendered = faucet_suffix_render(kind, arg);
	if (rendered == NULL)
		return NULL;
	tail = faucet__sprintf(FAUCET_KEY_SEPARATOR "%s", rendered);
	free(rendered);
	return tail;
}
