/*
 * host.c - the backfill runner's default host: what the CLI wants from the
 * process around a run (SIGINT/SIGTERM caught, the metrics file written),
 * kept out of runner.c so that a library user who passes its own host gets
 * neither behind its back.
 *
 * Signals arrive through a self-pipe: the handler only write()s the signal
 * number, and the runner polls the read end (stop_fd) and drains it a byte
 * at a time (stop_requested), so each Ctrl-C is one stop request.  The
 * handler finds the pipe through a process-wide variable, hence one trapping
 * host at a time per process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include <faucet/backfill.h>
#include <faucet/metrics.h>

static atomic_int signal_owner = 0;          /* one trapping host at a time */
static volatile sig_atomic_t signal_wr = -1; /* write end of the self-pipe */

static void on_signal(int signo)
{
	int saved = errno;
	unsigned char b = (unsigned char)signo;

	if (signal_wr >= 0)
		(void)!write(signal_wr, &b, 1);
	errno = saved;
}

typedef struct {
	int handle_signals;
	char *metrics_file;
	int active;   /* the trap is installed */
	int fds[2];   /* the self-pipe */
	struct sigaction old_int, old_term;
} default_host;

static int host_start(void *ctx)
{
	default_host *h = ctx;
	struct sigaction sa;
	int expected = 0;

	if (!h->handle_signals)
		return 0;
	if (!atomic_compare_exchange_strong(&signal_owner, &expected, 1))
		return faucet_error_set(FAUCET_EINVALID,
					"another backfill in this process already handles signals");
	if (pipe2(h->fds, O_CLOEXEC | O_NONBLOCK) != 0) {
		int err = errno;
		h->fds[0] = h->fds[1] = -1;
		atomic_store(&signal_owner, 0);
		return faucet__error_os(FAUCET_EIO, err, "backfill: cannot create a pipe");
	}
	signal_wr = h->fds[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* Cannot fail for these signals with a valid handler. */
	(void)sigaction(SIGINT, &sa, &h->old_int);
	(void)sigaction(SIGTERM, &sa, &h->old_term);
	h->active = 1;
	return 0;
}

static void host_finish(void *ctx)
{
	default_host *h = ctx;

	if (!h->active)
		return;
	(void)sigaction(SIGINT, &h->old_int, NULL);
	(void)sigaction(SIGTERM, &h->old_term, NULL);
	signal_wr = -1;
	close(h->fds[0]);
	close(h->fds[1]);
	h->fds[0] = h->fds[1] = -1;
	h->active = 0;
	atomic_store(&signal_owner, 0);
}

static int host_stop_fd(void *ctx)
{
	default_host *h = ctx;

	return h->active ? h->fds[0] : -1;
}

static int host_stop_requested(void *ctx)
{
	default_host *h = ctx;
	unsigned char b;

	if (!h->active || read(h->fds[0], &b, 1) != 1)
		return 0;
	return b;
}

static int host_publish_metrics(void *ctx, int final)
{
	default_host *h = ctx;

	(void)final;
	if (h->metrics_file == NULL)
		return 0;
	/* Atomic replacement: a scraper never sees half a file. */
	return faucet_metrics_write_file(h->metrics_file);
}

int faucet_backfill_default_host(faucet_backfill_host *host, int handle_signals,
				 const char *metrics_file)
{
	default_host *h;

	if (host == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_backfill_default_host: NULL host");
	memset(host, 0, sizeof(*host));
	h = faucet__calloc(1, sizeof(*h));
	if (h == NULL)
		return FAUCET_ENOMEM;
	h->handle_signals = handle_signals;
	h->fds[0] = h->fds[1] = -1;
	if (metrics_file != NULL && (h->metrics_file = faucet__strdup(metrics_file)) == NULL) {
		free(h);
		return FAUCET_ENOMEM;
	}
	host->ctx = h;
	host->start = host_start;
	host->finish = host_finish;
	host->stop_fd = host_stop_fd;
	host->stop_requested = host_stop_requested;
	host->publish_metrics = metrics_file != NULL ? host_publish_metrics : NULL;
	return 0;
}

void faucet_backfill_default_host_dispose(faucet_backfill_host *host)
{
	default_host *h;

	if (host == NULL || host->ctx == NULL)
		return;
	h = host->ctx;
	host_finish(h); /* a run that never reached its end */
	free(h->metrics_file);
	free(h);
	memset(host, 0, sizeof(*host));
}
