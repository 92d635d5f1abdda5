/*
 * error.c - the thread-local last error.
 *
 * Each thread owns one message buffer.  Setting an error formats into a
 * fresh heap string and swaps it in, so a message may safely be built from
 * the previous one (faucet__error_wrap).  The buffer is freed when the
 * thread exits, through a pthread key destructor, so no thread leaks it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct {
	int code;
	char *message;
	faucet_error view;
} error_slot;

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void slot_destroy(void *p)
{
	error_slot *slot = p;
	free(slot->message);
	free(slot);
}

static void slot_key_create(void)
{
	(void)pthread_key_create(&slot_key, slot_destroy);
}

/* The calling thread's slot, or NULL when even that cannot be allocated. */
static error_slot *slot_get(void)
{
	error_slot *slot;

	(void)pthread_once(&slot_once, slot_key_create);
	slot = pthread_getspecific(slot_key);
	if (slot == NULL) {
		slot = calloc(1, sizeof(*slot));
		if (slot == NULL)
			return NULL;
		if (pthread_setspecific(slot_key, slot) != 0) {
			free(slot);
			return NULL;
		}
	}
	return slot;
}

static void slot_set(int code, char *message)
{
	error_slot *slot = slot_get();

	if (slot == NULL) {
		free(message);
		return;
	}
	free(slot->message);
	slot->code = code;
	slot->message = message;
}

__attribute__((format(printf, 2, 0)))
static int error_vset(int code, const char *fmt, va_list ap)
{
	va_list copy;
	int n;
	char *msg;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0) {
		slot_set(code, NULL);
		return code;
	}
	msg = malloc((size_t)n + 1);
	if (msg != NULL)
		(void)vsnprintf(msg, (size_t)n + 1, fmt, ap);
	slot_set(code, msg);
	return code;
}

int faucet_error_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)error_vset(code, fmt, ap);
	va_end(ap);
	return code;
}

int faucet__error_os(int code, int err, const char *fmt, ...)
{
	va_list ap;
	char *prefix;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return faucet_error_set(code, "%s", strerror(err));
	prefix = malloc((size_t)n + 1);
	if (prefix == NULL)
		return faucet_error_set(code, "%s", strerror(err));
	va_start(ap, fmt);
	(void)vsnprintf(prefix, (size_t)n + 1, fmt, ap);
	va_end(ap);
	(void)faucet_error_set(code, "%s: %s", prefix, strerror(err));
	free(prefix);
	return code;
}

int faucet__error_wrap(const char *fmt, ...)
{
	const faucet_error *last = faucet_error_last();
	int code = last->code != 0 ? last->code : FAUCET_ERROR;
	char *old = faucet__strdup(last->message);
	char *context;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	context = n < 0 ? NULL : malloc((size_t)n + 1);
	if (context != NULL) {
		va_start(ap, fmt);
		(void)vsnprintf(context, (size_t)n + 1, fmt, ap);
		va_end(ap);
		(void)faucet_error_set(code, "%s: %s", context, old ? old : "");
	}
	free(context);
	free(old);
	return code;
}

const faucet_error *faucet_error_last(void)
{
	static const faucet_error none = {0, ""};
	static const faucet_error oom = {FAUCET_ENOMEM, "out of memory"};
	error_slot *slot = slot_get();

	if (slot == NULL)
		return &oom;
	if (slot->code == 0)
		return &none;
	slot->view.code = slot->code;
	slot->view.message = slot->message ? slot->message : "out of memory";
	return &slot->view;
}

void faucet_error_clear(void)
{
	error_slot *slot = slot_get();

	if (slot == NULL)
		return;
	free(slot->message);
	slot->message = NULL;
	slot->code = 0;
}

const char *faucet_error_name(int code)
{
	switch (code) {
	case FAUCET_OK: return "ok";
	case FAUCET_ERROR: return "state";
	case FAUCET_EINVALID: return "invalid";
	case FAUCET_ENOTFOUND: return "not-found";
	case FAUCET_EUNSUPPORTED: return "unsupported";
	case FAUCET_ECONFIG: return "config";
	case FAUCET_EIO: return "io";
	case FAUCET_ECRYPTO: return "crypto";
	case FAUCET_ENOMEM: return "out-of-memory";
	case FAUCET_EBUSY: return "busy";
	case FAUCET_ECONTENTION: return "contention";
	case FAUCET_EAUTH: return "auth";
	case FAUCET_EUNAVAILABLE: return "unavailable";
	case FAUCET_ETIMEOUT: return "timeout";
	case FAUCET_EUNKNOWN: return "outcome-unknown";
	case FAUCET_ELEASELOST: return "lease-lost";
	default: return "unknown";
	}
}

int faucet_error_retryable(int code)
{
	switch (code) {
	case FAUCET_EBUSY:
	case FAUCET_ECONTENTION:
	case FAUCET_EUNAVAILABLE:
	case FAUCET_ETIMEOUT:
		return 1;
	default:
		return 0;
	}
}
