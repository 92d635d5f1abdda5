/*
 * embedded_backfill.c - a backfill run by a program that owns its signals.
 *
 *   embedded_backfill STATE_DIR FROM TO WINDOW COMMAND [ARG...]
 *
 * Runs COMMAND once per window of [FROM, TO) (placeholders such as
 * ${backfill.start} are expanded in each ARG), with progress in a faucet
 * file store at STATE_DIR, so a second invocation with the same range
 * resumes where the first stopped.
 *
 * The point is the host: this program handles SIGINT and SIGTERM itself,
 * through a signalfd, as a server with its own event loop would.  It passes
 * its own faucet_backfill_host, so libfaucet installs no signal handler and
 * writes no metrics file: the signalfd is the host's stop descriptor, each
 * signal read from it is one stop request (the first stops the units with
 * SIGTERM, they stay pending; a second kills them), and the metrics are
 * printed to stderr at the end instead of written to a file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <faucet/faucet.h>

typedef struct {
	int sfd; /* signalfd for SIGINT and SIGTERM */
} app_host;

static int host_stop_fd(void *ctx)
{
	return ((app_host *)ctx)->sfd;
}

/* One signal read is one stop request; none left is 0. */
static int host_stop_requested(void *ctx)
{
	app_host *h = ctx;
	struct signalfd_siginfo si;

	if (read(h->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

static int host_publish_metrics(void *ctx, int final)
{
	char *text = NULL;
	int rc;

	(void)ctx;
	if (!final)
		return 0;
	rc = faucet_metrics_render(&text);
	if (rc == 0)
		fputs(text, stderr);
	free(text);
	return rc;
}

static void on_unit_end(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st,
			const char *error, size_t finished, size_t total)
{
	(void)ctx;
	fprintf(stderr, "[%zu/%zu] %s %s%s%s\n", finished, total, u->id,
		st == FAUCET_BACKFILL_DONE ? "done" : st == FAUCET_BACKFILL_FAILED ? "failed"
										 : "pending",
		error ? ": " : "", error ? error : "");
}

int main(int argc, char **argv)
{
	faucet_store *store = NULL;
	faucet_backfill_plan *plan = NULL;
	faucet_backfill_range range;
	faucet_backfill_run_options o;
	faucet_backfill_progress progress;
	faucet_backfill_result res;
	faucet_backfill_host host;
	app_host app = {-1};
	sigset_t mask;
	int rc = 2;

	if (argc < 6) {
		fprintf(stderr, "usage: %s STATE_DIR FROM TO WINDOW COMMAND [ARG...]\n", argv[0]);
		return 2;
	}
	/* The program's own signal handling: blocked, and read from a
	 * signalfd.  Units get them unblocked and at their defaults. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0 ||
	    (app.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "signalfd: %s\n", strerror(errno));
		return 2;
	}
	memset(&range, 0, sizeof(range));
	range.from = argv[2];
	range.to = argv[3];
	range.window = argv[4];
	if (faucet_store_open_file(&store, argv[1], NULL) != 0 ||
	    faucet_backfill_plan_new(&plan, &range) != 0) {
		fprintf(stderr, "%s\n", faucet_error_last()->message);
		goto out;
	}
	memset(&host, 0, sizeof(host));
	host.ctx = &app;
	host.stop_fd = host_stop_fd;
	host.stop_requested = host_stop_requested;
	host.publish_metrics = host_publish_metrics;
	memset(&progress, 0, sizeof(progress));
	progress.on_unit_end = on_unit_end;
	memset(&o, 0, sizeof(o));
	o.version = FAUCET_BACKFILL_RUN_OPTIONS_VERSION;
	o.pipeline = "example";
	o.argv = (const char *const *)(argv + 5);
	o.mode = FAUCET_BACKFILL_RESUME;
	o.host = &host;
	o.progress = &progress;
	if (faucet_backfill_run(store, plan, &o, &res) != 0) {
		fprintf(stderr, "%s\n", faucet_error_last()->message);
		goto out;
	}
	rc = res.exit_code;
out:
	faucet_backfill_plan_free(plan);
	faucet_store_free(store);
	close(app.sfd);
	return rc;
}
