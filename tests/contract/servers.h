/*
 * servers.h - helpers for the tests that talk to the throw-away servers of
 * scripts/test-servers.sh: their URLs, shell commands (psql, redis-cli) and
 * the stop/start control of the restart pair.
 */
#ifndef FAUCET_TEST_SERVERS_H
#define FAUCET_TEST_SERVERS_H

#include <faucet/faucet.h>

/* The environment variable's value; fails the test when it is unset (a
 * missing server is a failure, never a skip). */
const char *ts_env(const char *name);

/* Run a shell command; fails the test unless it exits 0.  Returns its
 * standard output without the trailing newline (caller frees). */
char *ts_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run `$FAUCET_TEST_SERVERS_CTL action` (pg-stop, pg-start, ...). */
void ts_ctl(const char *action);

/* A loopback TCP port nothing listens on (bound, then released). */
int ts_closed_port(void);

/* Fail when text contains the test servers' password. */
void ts_assert_no_secret(const char *text);

/* The store's doctor check reports a failed first probe with a hint, and
 * neither its reason nor its hint shows a password. */
void ts_assert_check_fails_without_secrets(faucet_store *s);

/* The server URL in `url_env` with a wrong password: the first get fails
 * with an error containing `needle`, and no message shows either password. */
void ts_assert_wrong_password_refused(const char *url_env, const char *needle);

/* With `server` ("pg" or "redis") of the restart pair stopped, an operation
 * on `s` fails with an error containing `label` and no secret; once it is
 * started again the next operations succeed, also after a restart nobody
 * noticed.  Leaves {"n":1} under "k". */
void ts_assert_reconnects_after_restart(faucet_store *s, const char *server, const char *label);

#endif
