/*
 * redact.c - the one place that takes secrets out of a store's address
 * before it is shown anywhere: error messages, --json output, doctor's
 * store label, the backfill report.
 *
 * A password can hide in four spellings, and each is replaced by "***":
 *
 *   - the URL's user information:  postgres://user:pw@host, redis://:pw@host
 *     (everything between the first ':' and the last '@' of the authority,
 *     since an unescaped '@' may sit inside the password);
 *   - the user information without a ':' of a backend whose row in the
 *     table (registry.c) says it is a password (redis://pw@host,
 *     redis-sentinel://pw@host): the Redis store refuses that form, but
 *     its message must not show it;
 *   - a query option named password, or ending in it (?password=...,
 *     &sslpassword=...), which libpq accepts as well as the user-info form;
 *   - libpq's keyword/value form ("host=h password='p w'"), which a config's
 *     `url:` may hold.
 *
 * The rest of the address stays, so a message still says where.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include <faucet/store.h>
#include "stores/registry.h"

/* Whether an option name names a secret: password, sslpassword, ... */
static int secret_option(const char *name, size_t len)
{
	static const char suffix[] = "password";
	const size_t n = sizeof(suffix) - 1;

	return len >= n && strncasecmp(name + len - n, suffix, n) == 0;
}

/* The query after '?': "a=1&password=x#frag". */
static void redact_query(faucet_buf *b, const char *q)
{
	while (*q) {
		size_t seg = strcspn(q, "&#");
		const char *eq = memchr(q, '=', seg);

		if (eq != NULL && secret_option(q, (size_t)(eq - q))) {
			(void)faucet__buf_put(b, q, (size_t)(eq - q) + 1);
			(void)faucet__buf_puts(b, "***");
		} else {
			(void)faucet__buf_put(b, q, seg);
		}
		q += seg;
		if (*q == '&') {
			(void)faucet__buf_putc(b, '&');
			q++;
		} else if (*q == '#') {
			(void)faucet__buf_puts(b, q);
			break;
		}
	}
}

/* libpq's "key = value key='quoted \' value'" form. */
static void redact_conninfo(faucet_buf *b, const char *p)
{
	while (*p) {
		const char *key, *sep, *val;
		size_t klen;

		if (isspace((unsigned char)*p)) {
			(void)faucet__buf_putc(b, *p++);
			continue;
		}
		key = p;
		while (*p && !isspace((unsigned char)*p) && *p != '=')
			p++;
		klen = (size_t)(p - key);
		(void)faucet__buf_put(b, key, klen);
		sep = p;
		while (isspace((unsigned char)*p))
			p++;
		if (*p != '=') {
			(void)faucet__buf_put(b, sep, (size_t)(p - sep));
			continue;
		}
		p++;
		while (isspace((unsigned char)*p))
			p++;
		(void)faucet__buf_put(b, sep, (size_t)(p - sep));
		val = p;
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
			}
			if (*p == '\'')
				p++;
		} else {
			while (*p && !isspace((unsigned char)*p))
				p++;
		}
		if (secret_option(key, klen))
			(void)faucet__buf_puts(b, "***");
		else
			(void)faucet__buf_put(b, val, (size_t)(p - val));
	}
}

char *faucet_url_redact(const char *url)
{
	const char *scheme_end, *auth, *auth_end, *at = NULL, *rest, *q;
	const faucet__backend_desc *be;
	faucet_buf b = FAUCET_BUF_INIT;

	if (url == NULL)
		return NULL;
	scheme_end = strstr(url, "://");
	if (scheme_end == NULL) {
		/* Not a URL: libpq's keyword form when it has an '=', else a
		 * path-like address (file:PATH, sqlite:PATH, memory:). */
		if (strchr(url, '=') == NULL)
			return faucet__strdup(url);
		redact_conninfo(&b, url);
		return faucet__buf_detach(&b);
	}
	auth = scheme_end + 3;
	auth_end = auth + strcspn(auth, "/?#");
	for (const char *p = auth; p < auth_end; p++) {
		if (*p == '@')
			at = p;
	}
	rest = auth;
	if (at != NULL) {
		const char *colon = memchr(auth, ':', (size_t)(at - auth));

		if (colon != NULL) {
			(void)faucet__buf_put(&b, url, (size_t)(colon - url) + 1);
			(void)faucet__buf_puts(&b, "***");
			rest = at;
		} else if ((be = faucet__backend_by_url(url, 1)) != NULL && be->userinfo_is_secret) {
			(void)faucet__buf_put(&b, url, (size_t)(auth - url));
			(void)faucet__buf_puts(&b, "***");
			rest = at;
		}
	}
	if (rest == auth)
		(void)faucet__buf_put(&b, url, (size_t)(auth - url));
	q = strchr(rest, '?');
	if (q == NULL) {
		(void)faucet__buf_puts(&b, rest);
	} else {
		(void)faucet__buf_put(&b, rest, (size_t)(q - rest) + 1);
		redact_query(&b, q + 1);
	}
	return faucet__buf_detach(&b);
}

/* Whether a NAME=VALUE word's name says it holds a secret. */
static int secret_word(const char *w, size_t len)
{
	static const char *const names[] = {"password", "passwd", "secret", "token", "apikey",
					    "api_key", "key"};
	const char *eq = memchr(w, '=', len);
	size_t n;

	if (eq == NULL)
		return 0;
	n = (size_t)(eq - w);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t k = strlen(names[i]);

		if (n >= k && strncasecmp(eq - k, names[i], k) == 0)
			return 1;
	}
	return 0;
}

char *faucet__redact_command(const char *cmd)
{
	faucet_buf b = FAUCET_BUF_INIT;
	const char *p = cmd ? cmd : "";

	while (*p) {
		size_t len = strcspn(p, " \t\n");
		char *word, *safe;

		if (len == 0) {
			(void)faucet__buf_putc(&b, *p++);
			continue;
		}
		if ((word = faucet__strndup(p, len)) == NULL) {
			faucet__buf_dispose(&b);
			return NULL;
		}
		if (secret_word(word, len)) {
			(void)faucet__buf_put(&b, word, (size_t)(strchr(word, '=') - word) + 1);
			(void)faucet__buf_puts(&b, "***");
		} else if (strstr(word, "://") != NULL || strchr(word, '=') != NULL) {
			/* A URL anywhere in the word (--state=postgres://u:pw@h). */
			const char *u = strstr(word, "://");
			size_t start = 0;

			if (u != NULL) {
				while (u > word && (isalnum((unsigned char)u[-1]) || u[-1] == '+' ||
						    u[-1] == '-' || u[-1] == '.'))
					u--;
				start = (size_t)(u - word);
			}
			if ((safe = faucet_url_redact(word + start)) == NULL) {
				free(word);
				faucet__buf_dispose(&b);
				return NULL;
			}
			(void)faucet__buf_put(&b, word, start);
			(void)faucet__buf_puts(&b, safe);
			free(safe);
		} else {
			(void)faucet__buf_put(&b, word, len);
		}
		free(word);
		p += len;
	}
	if (b.failed) {
		faucet__buf_dispose(&b);
		return NULL;
	}
	return b.ptr ? faucet__buf_detach(&b) : faucet__strdup("");
}
