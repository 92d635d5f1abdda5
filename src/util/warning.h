/*
 * warning.h - setting the thread-local last warning (internal).
 *
 * A warning is for an operation that did what was asked but left something
 * behind the operator should know about; the call still returns 0.  The
 * public side is faucet_warning_last() in faucet/common.h.
 */
#ifndef FAUCET_WARNING_H
#define FAUCET_WARNING_H

/* Set the calling thread's last warning (printf-style); an allocation
 * failure drops it, which only loses the message. */
void faucet__warning_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
