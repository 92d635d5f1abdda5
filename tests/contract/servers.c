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
