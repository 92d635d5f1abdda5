/*
 * open.c - from a store URL or a `state:` config to an open store.
 *
 * URLs and configs meet here: a URL is turned into a faucet_store_config by
 * its backend's from_url, then both paths go through the same open call.
 * The backends are the rows of the table in registry.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stores/registry.h"

static void list_known(faucet_buf *b, int schemes)
{
	const faucet__backend_desc *be;

	for (size_t i = 0; (be = faucet__backend_at(i)) != NULL; i++) {
		if (i > 0)
			(void)faucet__buf_puts(b, ", ");
		if (!schemes) {
			(void)faucet__buf_puts(b, be->info.type);
			continue;
		}
		for (size_t j = 0; be->info.schemes[j] != NULL; j++) {
			if (j > 0)
				(void)faucet__buf_puts(b, ", ");
			(void)faucet__buf_puts(b, be->info.schemes[j]);
		}
	}
}

/* Whether some field of the backend is also a URL option (its placeholder
 * says how a URL spells it), so a config's url may carry faucet's options. */
static int takes_url_options(const faucet__backend_desc *be)
{
	for (const faucet_backend_field *f = be->info.fields; f->name != NULL; f++) {
		if (f->placeholder != NULL)
			return 1;
	}
	return 0;
}

/* One option given both ways: an error naming both places (the values may
 * be anything, so neither is shown). */
static int given_twice(const char *name)
{
	return faucet_error_set(FAUCET_ECONFIG,
				"state store option '%s' is given both in the URL (?%s=) and in "
				"the config (%s:); give it in one place",
				name, name, name);
}

/*
 * A config's `url` may carry faucet's options in its query, as a --state
 * URL does (postgres://...?table=t).  They come off the URL here, as
 * faucet_store_open_url takes them off, and join the config's own fields;
 * one given in both places is an error rather than a silent choice.
 */
static int open_config_with_url(const faucet__backend_desc *be, faucet_store **out,
				const faucet_store_config *cfg)
{
	faucet_store_config from, merged = *cfg;
	char *copy = faucet__strdup(cfg->url);
	int rc;

	if (copy == NULL)
		return FAUCET_ENOMEM;
	memset(&from, 0, sizeof(from));
	rc = be->from_url(copy, &from);
	if (rc == 0 && from.table != NULL && cfg->table != NULL)
		rc = given_twice("table");
	if (rc == 0 && from.ensure_table != 0 && cfg->ensure_table != 0)
		rc = given_twice("ensure_table");
	if (rc == 0 && from.max_connections != 0 && cfg->max_connections != 0)
		rc = given_twice("max_connections");
	if (rc == 0 && from.namespace_name != NULL && cfg->namespace_name != NULL)
		rc = given_twice("namespace");
	if (rc == 0 && from.redis_index != 0 && cfg->redis_index != 0)
		rc = given_twice("index");
	if (rc == 0 && from.redis_min_replicas != 0 && cfg->redis_min_replicas != 0)
		rc = given_twice("min_replicas");
	if (rc == 0 && from.redis_wait_timeout_ms != 0 && cfg->redis_wait_timeout_ms != 0)
		rc = given_twice("wait_timeout");
	if (rc == 0) {
		merged.url = from.url;
		if (from.table != NULL)
			merged.table = from.table;
		if (from.ensure_table != 0)
			merged.ensure_table = from.ensure_table;
		if (from.max_connections != 0)
			merged.max_connections = from.max_connections;
		if (from.namespace_name != NULL)
			merged.namespace_name = from.namespace_name;
		if (from.redis_index != 0)
			merged.redis_index = from.redis_index;
		if (from.redis_min_replicas != 0)
			merged.redis_min_replicas = from.redis_min_replicas;
		if (from.redis_wait_timeout_ms != 0)
			merged.redis_wait_timeout_ms = from.redis_wait_timeout_ms;
		rc = be->open(out, &merged);
	}
	free(copy);
	return rc;
}

int faucet_store_open_config(faucet_store **out, const faucet_store_config *caller_cfg)
{
	static const size_t sizes[] = {offsetof(faucet_store_config, redis_min_replicas),
				       sizeof(faucet_store_config)};
	faucet_store_config current;
	const faucet_store_config *cfg = &current;
	const faucet__backend_desc *be;
	faucet_buf known = FAUCET_BUF_INIT;

	if (out == NULL || caller_cfg == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_open_config: NULL argument");
	*out = NULL;
	if (faucet__options_load(&current, sizeof(current), caller_cfg, sizes,
				 FAUCET_STORE_CONFIG_VERSION, "faucet_store_config") != 0)
		return FAUCET_EINVALID;
	if (cfg->type == NULL || *cfg->type == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "state store config has no `type`");
	be = faucet__backend_by_type(cfg->type);
	if (be != NULL) {
		if (cfg->url != NULL && strchr(cfg->url, '?') != NULL && takes_url_options(be))
			return open_config_with_url(be, out, cfg);
		if (cfg->url != NULL && be->check_url != NULL) {
			int rc = be->check_url(cfg->url);
			if (rc != 0)
				return rc;
		}
		return be->open(out, cfg);
	}
	list_known(&known, 0);
	(void)faucet_error_set(FAUCET_ECONFIG,
			       "unknown state store type '%s' (this build knows: %s)", cfg->type,
			       known.ptr ? known.ptr : "");
	faucet__buf_dispose(&known);
	return FAUCET_ECONFIG;
}

int faucet_store_open_url(faucet_store **out, const char *url)
{
	const faucet__backend_desc *be;
	faucet_buf known = FAUCET_BUF_INIT;
	char *redacted;

	if (out == NULL || url == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_open_url: NULL argument");
	*out = NULL;
	be = faucet__backend_by_url(url, 0);
	if (be != NULL) {
		faucet_store_config cfg;
		char *copy = faucet__strdup(url);
		int rc;

		if (copy == NULL)
			return FAUCET_ENOMEM;
		memset(&cfg, 0, sizeof(cfg));
		rc = be->from_url(copy, &cfg);
		if (rc == 0)
			rc = be->open(out, &cfg);
		free(copy);
		return rc;
	}
	list_known(&known, 1);
	redacted = faucet_url_redact(url);
	(void)faucet_error_set(FAUCET_ECONFIG, "unknown state store URL '%s' (this build knows: %s)",
			       redacted ? redacted : "?", known.ptr ? known.ptr : "");
	free(redacted);
	faucet__buf_dispose(&known);
	return FAUCET_ECONFIG;
}

/* Percent-decode in place; returns -1 on a bad escape. */
static int percent_decode(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r == '%') {
			int hi = faucet__hex_digit(r[1]), lo = hi < 0 ? -1 : faucet__hex_digit(r[2]);
			if (hi < 0 || lo < 0)
				return -1;
			*w++ = (char)(hi * 16 + lo);
			r += 2;
		} else {
			*w++ = *r == '+' ? ' ' : *r;
		}
	}
	*w = '\0';
	return 0;
}

int faucet__url_take_params(char *url, const char *const *names, char **values, size_t count)
{
	char *q = strchr(url, '?');
	char *p, *found[8] = {0};
	size_t ulen, at;
	int rc = 0;

	for (size_t i = 0; i < count; i++)
		values[i] = NULL;
	if (q == NULL)
		return 0;
	if (count > FAUCET_ARRAY_LEN(found))
		return faucet_error_set(FAUCET_EINVALID, "too many URL options asked for");
	/* Walk "a=1&b=2", cutting out each asked-for option and keeping the
	 * rest (a driver's own options, such as sslmode, stay in the URL). */
	p = q + 1;
	while (*p && rc == 0) {
		char *amp = strchr(p, '&');
		size_t seglen = amp ? (size_t)(amp - p) : strlen(p);
		size_t i;

		for (i = 0; i < count; i++) {
			size_t nlen = strlen(names[i]);
			if (seglen > nlen && strncmp(p, names[i], nlen) == 0 && p[nlen] == '=')
				break;
		}
		if (i == count) {
			p = amp ? amp + 1 : p + seglen;
			continue;
		}
		if (found[i] != NULL) {
			rc = faucet_error_set(FAUCET_ECONFIG, "store URL option '%s' is given twice",
					      names[i]);
			break;
		}
		found[i] = faucet__strndup(p + strlen(names[i]) + 1, seglen - strlen(names[i]) - 1);
		if (found[i] == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		if (percent_decode(found[i]) != 0)
			rc = faucet_error_set(FAUCET_ECONFIG, "store URL option '%s' has a bad %%-escape",
					      names[i]);
		memmove(p, amp ? amp + 1 : p + seglen, strlen(amp ? amp + 1 : p + seglen) + 1);
	}
	/* Drop a dangling '?' or '&'. */
	ulen = strlen(url);
	while (ulen > 0 && (url[ulen - 1] == '&' || url[ulen - 1] == '?'))
		url[--ulen] = '\0';
	/* The decoded values are no longer than the text cut out, so they fit
	 * one after another behind the URL's new terminator. */
	at = ulen + 1;
	for (size_t i = 0; i < count; i++) {
		if (found[i] == NULL)
			continue;
		if (rc == 0) {
			size_t vlen = strlen(found[i]);
			memcpy(url + at, found[i], vlen + 1);
			values[i] = url + at;
			at += vlen + 1;
		}
		free(found[i]);
	}
	if (rc != 0) {
		for (size_t i = 0; i < count; i++)
			values[i] = NULL;
	}
	return rc;
}

int faucet__parse_positive(const char *text, const char *name, long max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < 1 || v > max)
		return faucet_error_set(FAUCET_ECONFIG,
					"%s must be a whole number from 1 to %ld, got '%s'",
					name, max, text);
	*out = (int)v;
	return 0;
}

int faucet__parse_duration_ms(const char *text, const char *name, long max_ms, int *out)
{
	char *end;
	long v, scale = 0;

	errno = 0;
	v = strtol(text, &end, 10);
	if (end != text && strcmp(end, "ms") == 0)
		scale = 1;
	else if (end != text && strcmp(end, "s") == 0)
		scale = 1000;
	if (errno != 0 || scale == 0 || v < 1 || v > max_ms / scale)
		return faucet_error_set(FAUCET_ECONFIG,
					"%s must be a duration such as 500ms or 1s (1ms to %lds), "
					"got '%s'",
					name, max_ms / 1000, text);
	*out = (int)(v * scale);
	return 0;
}

/*
 * libpq's multi-host URL: postgres://[userinfo@]h1[:p1],h2[:p2]/db.  libpq
 * takes an empty host for its default (the local socket) and a port such
 * as "5x" only when connecting, with a message about the whole list; an
 * operator who typed "h1:5432,,h2" meant another host.  So each host of
 * the list must be non-empty and each port a number from 1 to 65535.
 * A URL in libpq's key=value form is left to libpq.
 */
int faucet__check_pg_hosts(const char *url)
{
	const char *p = strstr(url, "://"), *end, *at;
	size_t n = 0;

	if (p == NULL)
		return 0;
	p += 3;
	end = p + strcspn(p, "/?");
	at = NULL;
	for (const char *q = p; q < end; q++) {
		if (*q == '@')
			at = q;
	}
	if (at != NULL)
		p = at + 1;
	if (p == end)
		return 0; /* no host at all: libpq's default, as with one host */
	while (p <= end) {
		size_t len = strcspn(p, ",/?");
		const char *colon, *host_end;
		char *shown;

		if (p + len > end)
			len = (size_t)(end - p);
		n++;
		/* [v6]:port keeps its colons inside the brackets. */
		host_end = p;
		if (*p == '[') {
			const char *close = memchr(p, ']', len);
			host_end = close != NULL ? close + 1 : p + len;
		}
		colon = memchr(host_end, ':', len - (size_t)(host_end - p));
		if ((colon != NULL ? colon : p + len) == p) {
			shown = faucet_url_redact(url);
			(void)faucet_error_set(FAUCET_ECONFIG,
					       "postgres store URL %s: host %zu of the host list is "
					       "empty (postgres://USER@HOST1:PORT1,HOST2:PORT2/DB)",
					       shown ? shown : "?", n);
			free(shown);
			return FAUCET_ECONFIG;
		}
		if (colon != NULL) {
			size_t plen = (size_t)(p + len - colon - 1);
			long port = 0;
			int ok = plen > 0 && plen <= 5;

			for (size_t i = 0; ok && i < plen; i++) {
				ok = isdigit((unsigned char)colon[1 + i]) != 0;
				port = port * 10 + (colon[1 + i] - '0');
			}
			if (!ok || port < 1 || port > 65535) {
				shown = faucet_url_redact(url);
				(void)faucet_error_set(FAUCET_ECONFIG,
						       "postgres store URL %s: host %zu has a bad port "
						       "'%.*s' (a number from 1 to 65535)",
						       shown ? shown : "?", n, (int)plen, colon + 1);
				free(shown);
				return FAUCET_ECONFIG;
			}
		}
		if (p + len >= end)
			break;
		p += len + 1;
	}
	return 0;
}
