/*
 * servers.c - see servers.h.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "contract/servers.h"

const char *ts_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("%s is not set: start the servers with scripts/test-servers.sh "
			 "(scripts/test.sh does)",
			 name);
	return v;
}

char *ts_sh(const char *fmt, ...)
{
	char cmd[8192], *out = NULL;
	size_t len = 0, cap = 0;
	va_list ap;
	FILE *p;
	int c, status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((c = fgetc(p)) != EOF) {
		if (len + 2 > cap) {
			cap = cap ? cap * 2 : 256;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		out[len++] = (char)c;
	}
	status = pclose(p);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("command failed (status %d): %s", status, cmd);
	if (out == NULL)
		out = strdup("");
	else
		out[len] = '\0';
	while (len > 0 && out[len - 1] == '\n')
		out[--len] = '\0';
	return out;
}

void ts_ctl(const char *action)
{
	free(ts_sh("'%s' %s", ts_env("FAUCET_TEST_SERVERS_CTL"), action));
}

int ts_closed_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd); /* bound but never listening: connections are refused */
	return port;
}

void ts_assert_no_secret(const char *text)
{
	const char *pw = ts_env("FAUCET_TEST_PASSWORD");

	if (text != NULL && strstr(text, pw) != NULL)
		fail_msg("a message shows the password: %s", text);
	if (text != NULL && strstr(text, "wrong-secret-pw") != NULL)
		fail_msg("a message shows the (wrong) password: %s", text);
}

void ts_assert_check_fails_without_secrets(faucet_store *s)
{
	faucet_check_context ctx = {.timeout_ms = 3000};
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	assert_int_equal(faucet_store_check(s, &ctx, &r), 0);
	assert_true(faucet_check_report_failed_count(r) >= 1);
	p = faucet_check_report_probe(r, 0);
	assert_int_equal(p->status, FAUCET_PROBE_FAIL);
	assert_non_null(p->hint);
	ts_assert_no_secret(p->reason);
	ts_assert_no_secret(p->hint);
	faucet_check_report_free(r);
}

void ts_assert_wrong_password_refused(const char *url_env, const char *needle)
{
	const char *good = ts_env(url_env);
	const char *pw = ts_env("FAUCET_TEST_PASSWORD");
	const char *at = strstr(good, pw);
	char url[512];
	faucet_store *s = NULL;
	faucet_value *out = NULL;

	assert_non_null(at);
	snprintf(url, sizeof(url), "%.*swrong-secret-pw%s", (int)(at - good), good,
		 at + strlen(pw));
	assert_int_equal(faucet_store_open_url(&s, url), 0);
	/* A typed code, so an embedder can tell "fix the credentials" from
	 * "retry later". */
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_EAUTH);
	tu_assert_error_contains(needle);
	ts_assert_no_secret(faucet_error_last()->message);
	ts_assert_check_fails_without_secrets(s);
	faucet_store_free(s);
}

void ts_assert_reconnects_after_restart(faucet_store *s, const char *server, const char *label)
{
	faucet_value *one = tu_v("{\"n\":1}"), *two = tu_v("{\"n\":2}"), *out = NULL;
	char stop[32], start[32];
	int written = 0;

	snprintf(stop, sizeof(stop), "%s-stop", server);
	snprintf(start, sizeof(start), "%s-start", server);
	assert_int_equal(faucet_store_put(s, "k", one), 0);
	tu_assert_value(s, "k", "{\"n\":1}");

	/* During the outage an operation fails with a clear error... */
	ts_ctl(stop);
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains(label);
	ts_assert_no_secret(faucet_error_last()->message);
	ts_ctl(start);
	/* ...and the next one after it succeeds. */
	tu_assert_value(s, "k", "{\"n\":1}");
	assert_int_equal(faucet_store_compare_and_put(s, "k", one, two, &written), 0);
	assert_true(written);

	/* A restart nobody noticed: the pooled connection is stale, and even a
	 * compare-and-put (never retried) succeeds at once. */
	ts_ctl(stop);
	ts_ctl(start);
	assert_int_equal(faucet_store_compare_and_put(s, "k", two, one, &written), 0);
	assert_true(written);
	faucet_value_free(one);
	faucet_value_free(two);
}
