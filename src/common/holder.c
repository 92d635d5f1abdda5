/*
 * holder.c - who holds a lease: "{host}:{pid}:{random}", and whether that
 * process is known to be gone.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

char *faucet__holder_id(void)
{
	char host[256] = "localhost", rnd[17];

	if (gethostname(host, sizeof(host)) != 0)
		(void)snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if (faucet__random_hex(rnd, 8) != 0)
		return NULL;
	return faucet__sprintf("%s:%ld:%s", host, (long)getpid(), rnd);
}

int faucet__holder_dead(const char *holder)
{
	char host[256] = "localhost";
	const char *colon, *p;
	char *end;
	long pid;

	if (holder == NULL || (colon = strchr(holder, ':')) == NULL)
		return 0;
	if (gethostname(host, sizeof(host)) != 0)
		return 0;
	host[sizeof(host) - 1] = '\0';
	if ((size_t)(colon - holder) != strlen(host) || strncmp(holder, host, strlen(host)) != 0)
		return 0; /* another host's process: only its lease's expiry tells */
	p = colon + 1;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno != 0 || end == p || *end != ':' || pid <= 0 || pid > INT32_MAX)
		return 0;
	/* EPERM: it exists but is another user's. */
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}
