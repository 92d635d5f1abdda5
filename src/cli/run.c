/*
 * run.c - `faucet run`: one run of an invocation under its lease, the
 * command's outcome recorded and undoable (doc/design.md §8.8).
 *
 * The command is checked before anything is written (a name that is not on
 * PATH fails with exit 2 and no lease taken).  Then: take the lease, start
 * the command (no shell), renew the lease every third of its TTL while it
 * runs, record the outcome, release the lease, exit with the command's
 * status.  stdout belongs to the command - faucet's own lines, the run id
 * among them, go to stderr.
 *
 * The command runs in a process group of its own and dies with faucet
 * (PR_SET_PDEATHSIG, set between fork and exec): a faucet that is killed
 * outright does not leave it running.  SIGINT, SIGTERM and SIGHUP - a
 * Ctrl-C at the terminal reaches faucet only, since the command's group is
 * not the terminal's foreground group - are forwarded to the whole group,
 * and if the command has not ended KILL_GRACE_MS later its group is
 * killed.  When the command ends, whatever it left running in its group is
 * killed too.  (So the command cannot read from the terminal: a read would
 * stop it.  Commands run by faucet are pipelines, not dialogues.)  The
 * loop is poll() on a self-pipe (signals, SIGCHLD), the command's stdout
 * under --singer, and a timeout for the next lease renewal, the next state
 * write or the kill; nothing sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"
#include "singer.h"


#define STATE_WRITE_INTERVAL_MS 1000
#define KILL_GRACE_MS 10000 /* from an interrupt to killing the command's group */

typedef struct {
	const char *pipeline, *row, *lease_ttl;
	int wait_given;
	const char *wait;
	int singer;
	faucet_strarray command;
} run_args;

/* ---- signals ------------------------------------------------------------------------ */

static volatile sig_atomic_t self_pipe_wr = -1;

/* One byte per signal: its number. */
static void on_signal(int signo)
{
	int saved = errno;
	unsigned char b = (unsigned char)signo;

	if (self_pipe_wr >= 0)
		(void)!write(self_pipe_wr, &b, 1);
	errno = saved;
}

static int install_signals(int fds[2])
{
	struct sigaction sa;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	(void)signal(SIGPIPE, SIG_IGN);
	self_pipe_wr = fds[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
	    sigaction(SIGHUP, &sa, NULL) != 0 || sigaction(SIGCHLD, &sa, NULL) != 0)
		return -1;
	return 0;
}

/* ---- arguments ----------------------------------------------------------------------- */


static int parse_args(cli_context *ctx, int argc, char **argv, run_args *a)
{
	enum { O_PIPELINE = 1, O_ROW, O_TTL, O_SINGER };
	static const cli_option opts[] = {{"pipeline", 0, 1, O_PIPELINE}, {"row", 0, 1, O_ROW},
					  {"lease-ttl", 0, 1, O_TTL},     {"singer", 0, 0, O_SINGER},
					  {NULL, 0, 0, 0}};
	cli_args it;
	const char *v;
	int id;

	cli_take_wait(&argc, argv, &a->wait_given, &a->wait);
	cli_args_init(&it, ctx, "run", argc, argv);
	while ((id = cli_args_next(&it, opts, &v)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("run") == 0 ? -1 : CLI_EXIT_FAILED;
		if (id == CLI_ARG_POSITIONAL) {
			if (!it.positional_only)
				return cli_usage_error("run", "unexpected argument '%s' (put the "
							      "command after --)", v);
			if (faucet__strarray_append(&a->command, v) != 0)
				return cli_fail(CLI_EXIT_FAILED, "run");
			/* Everything after the command's name is its own. */
			continue;
		}
		if (id == O_PIPELINE)
			a->pipeline = v;
		else if (id == O_ROW)
			a->row = v;
		else if (id == O_TTL)
			a->lease_ttl = v;
		else if (id == O_SINGER)
			a->singer = 1;
	}
	return 0;
}

/* ---- the run's state ---------------------------------------------------------------------- */

typedef struct {
	cli_context *ctx;
	run_args *a;
	faucet_store *s;
	faucet_run *run;
	const char *pipeline, *row;
	char *state_key;
	char *state_file;         /* --singer: the bookmark handed to the command */
	char *exe;
	char *self;               /* this faucet binary's absolute path, for FAUCET_BIN */
	char *command_line;       /* for the status entry */
	pid_t pid;
	faucet_proc_watchdog *watchdog; /* kills the command's group if faucet dies (or NULL) */
	int child_status, child_done;
	int sig_fds[2];
	int out_fd;               /* --singer: the command's stdout, -1 when closed */
	singer cap;
	faucet_value *before;     /* --singer: the bookmark when the run began (NULL: none) */
	int stored;               /* a captured state was stored */
	uint64_t last_state_ms;   /* when the last state was stored (0 = never) */
	int state_failed;         /* a state write failed: the run is failed */
	char *state_error;
	int interrupted;          /* the signal that interrupted us, or 0 */
	uint64_t kill_at_ms;      /* interrupted: when to kill the command's group (0: not) */
	int reap;                 /* a SIGCHLD came: look at the command with waitpid */
	int lease_lost;
	uint64_t renew_at_ms;
} run_state;

static char *join_command(const faucet_strarray *cmd)
{
	faucet_buf b = FAUCET_BUF_INIT;

	for (size_t i = 0; i < cmd->count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(&b, ' ');
		(void)faucet__buf_puts(&b, cmd->strings[i]);
	}
	return b.failed ? (faucet__buf_dispose(&b), NULL) : faucet__buf_detach(&b);
}

/* --singer: write the bookmark to a private file for the command - `{}`
 * when there is none yet, since taps refuse an empty state file (or an
 * empty --state argument). */
static int write_state_file(run_state *st)
{
	faucet_value *v = NULL;
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd, rc;
	size_t off = 0, len;
	const char *text;

	if (faucet_store_get(st->s, st->state_key, &v) != 0)
		return cli_fail(CLI_EXIT_FAILED, "reading %s", st->state_key);
	st->before = faucet_value_ref(v);
	path = faucet__sprintf("%s/faucet-state.XXXXXX", dir && *dir ? dir : "/tmp");
	if (path == NULL) {
		faucet_value_free(v);
		return cli_fail(CLI_EXIT_FAILED, "run");
	}
	/* mkstemp creates the file 0600 with O_EXCL: no one else can have it. */
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		rc = cli_error(CLI_EXIT_FAILED, "cannot create the state file %s: %s", path,
			       strerror(errno));
		free(path);
		faucet_value_free(v);
		return rc;
	}
	text = v != NULL ? faucet_value_json(v) : "{}";
	len = v != NULL ? faucet_value_len(v) : 2;
	/* 0600 whatever mkostemp's libc does with the mode. */
	rc = fchmod(fd, S_IRUSR | S_IWUSR);
	while (off < len && rc == 0) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -1;
		else
			off += (size_t)n;
	}
	if (rc == 0 && write(fd, "\n", 1) != 1)
		rc = -1;
	if (close(fd) != 0)
		rc = -1;
	faucet_value_free(v);
	if (rc != 0) {
		rc = cli_error(CLI_EXIT_FAILED, "cannot write the state file %s: %s", path,
			       strerror(errno));
		(void)unlink(path);
		free(path);
		return rc;
	}
	st->state_file = path;
	return 0;
}

/* ${state.file} in an argument: the state file's path ("" when none). */
static char *expand_arg(const char *arg, const char *state_file)
{
	static const char ph[] = "${state.file}";
	faucet_buf b = FAUCET_BUF_INIT;
	const char *p = arg, *hit;

	while ((hit = strstr(p, ph)) != NULL) {
		(void)faucet__buf_put(&b, p, (size_t)(hit - p));
		(void)faucet__buf_puts(&b, state_file ? state_file : "");
		p = hit + sizeof(ph) - 1;
	}
	(void)faucet__buf_puts(&b, p);
	return b.failed ? (faucet__buf_dispose(&b), NULL) : faucet__buf_detach(&b);
}

/* The command's environment: ours, minus the variables we set, plus the
 * run's. */
static int build_env(run_state *st, char ***env_out)
{
	static const char *const names[] = {
		"FAUCET_RUN_ID", "FAUCET_RUN_PIPELINE", "FAUCET_RUN_ROW", "FAUCET_STATE_KEY",
		"FAUCET_STATE_FILE", "FAUCET_CONFIG", "FAUCET_STATE", "FAUCET_ENCRYPTION_KEY_ENV",
		"FAUCET_PREVIOUS_KEY_ENV", "FAUCET_BIN", NULL};
	cli_context *ctx = st->ctx;
	faucet_strarray set = {0};
	const char *previous = NULL;
	int rc = 0;

	rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_RUN_ID=%s", faucet_run_id(st->run)));
	rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_RUN_PIPELINE=%s", st->pipeline));
	rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_RUN_ROW=%s", st->row));
	rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_STATE_KEY=%s", st->state_key));
	if (st->a->singer)
		rc |= faucet__strarray_append_owned(
			&set, faucet__sprintf("FAUCET_STATE_FILE=%s", st->state_file ? st->state_file : ""));
	if (ctx->selected_config_path != NULL)
		rc |= faucet__strarray_append_owned(
			&set, faucet__sprintf("FAUCET_CONFIG=%s", ctx->selected_config_path));
	else if (ctx->selected_url != NULL)
		rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_STATE=%s", ctx->selected_url));
	/* The key variables' names (never the keys): the current one, and the
	 * previous ones a store being rotated still needs to read older files
	 * (the variables themselves are inherited). */
	if (ctx->key_env != NULL) {
		rc |= faucet__strarray_append_owned(
			&set, faucet__sprintf("FAUCET_ENCRYPTION_KEY_ENV=%s", ctx->key_env));
		previous = cli_previous_key_env_list(ctx);
		if (previous != NULL)
			rc |= faucet__strarray_append_owned(
				&set, faucet__sprintf("FAUCET_PREVIOUS_KEY_ENV=%s", previous));
		else if (ctx->previous_key_envs.count > 0)
			rc |= FAUCET_ENOMEM; /* the list could not be made */
	}
	rc |= faucet__strarray_append_owned(&set, faucet__sprintf("FAUCET_BIN=%s", st->self));
	/* faucet_proc_env wants a NULL-terminated list. */
	rc |= faucet__strarray_append_owned(&set, faucet__strdup(""));
	if (rc == 0) {
		free(set.strings[set.count - 1]);
		set.strings[set.count - 1] = NULL;
		rc = faucet_proc_env(names, (const char *const *)set.strings, env_out);
	}
	faucet_strarray_dispose(&set);
	return rc;
}

/* The command has been reaped: the watchdog may go without killing. */
static void stop_watchdog(run_state *st)
{
	faucet_proc_watchdog_stop(st->watchdog);
	st->watchdog = NULL;
}

static int spawn_command(run_state *st)
{
	faucet_proc_options po = FAUCET_PROC_OPTIONS_INIT;
	faucet_strarray args = {0};
	char **env = NULL;
	int out[2] = {-1, -1}, rc = 0, exec_errno = 0;

	for (size_t i = 0; rc == 0 && i < st->a->command.count; i++)
		rc = faucet__strarray_append_owned(&args, expand_arg(st->a->command.strings[i],
							       st->state_file));
	if (rc == 0)
		rc = faucet__strarray_append_owned(&args, faucet__strdup(""));
	if (rc == 0) {
		free(args.strings[args.count - 1]);
		args.strings[args.count - 1] = NULL;
		rc = build_env(st, &env);
	}
	if (rc != 0) {
		faucet_strarray_dispose(&args);
		return cli_fail(CLI_EXIT_FAILED, "run");
	}
	if (st->a->singer && pipe2(out, O_CLOEXEC) != 0) {
		rc = cli_error(CLI_EXIT_FAILED, "cannot create a pipe: %s", strerror(errno));
		goto done;
	}
	fflush(stdout);
	fflush(stderr);
	po.path = st->exe;
	po.argv = args.strings;
	po.envp = env;
	po.fd[1] = out[1];
	po.flags = FAUCET_PROC_DIE_WITH_PARENT;
	/* The command's group is watched from before the command runs: faucet
	 * killed at any moment takes the command's children with it.  Without
	 * a watchdog the parent-death signal still ends the command itself. */
	if (faucet_proc_spawn_watched(&po, &st->pid, &exec_errno, &st->watchdog) != 0 ||
	    exec_errno != 0) {
		st->pid = 0;
		rc = cli_fail(CLI_EXIT_FAILED, "run");
		goto done;
	}
	if (out[1] >= 0) {
		close(out[1]);
		out[1] = -1;
		st->out_fd = out[0];
		out[0] = -1;
		(void)fcntl(st->out_fd, F_SETFL, O_NONBLOCK);
		/* A larger pipe means fewer wake-ups for a chatty command; the
		 * default size stays if the system does not allow it. */
		(void)fcntl(st->out_fd, F_SETPIPE_SZ, 1 << 20);
	}
done:
	for (int i = 0; i < 2; i++)
		if (out[i] >= 0)
			close(out[i]);
	free(env);
	faucet_strarray_dispose(&args);
	return rc;
}

/* ---- the loop --------------------------------------------------------------------------------- */

/* A reader that went away (`faucet run --singer ... | head`) must not end
 * the run half-recorded: SIGPIPE is ignored, and once stdout is closed
 * the lines are dropped while the states are still captured and stored. */
static int stdout_gone;

/* The spans of one read, in one writev (a short write resumes where it
 * stopped). */
static int emit_stdout(void *ctx, const struct iovec *spans, int count)
{
	struct iovec iov[SINGER_SPANS];
	int first = 0;

	(void)ctx;
	if (count > SINGER_SPANS) {
		errno = EINVAL;
		return -1;
	}
	memcpy(iov, spans, (size_t)count * sizeof(*iov));
	while (first < count && !stdout_gone) {
		ssize_t n = writev(STDOUT_FILENO, iov + first, count - first);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			stdout_gone = 1;
			return 0;
		}
		if (n < 0)
			return -1;
		while (first < count && (size_t)n >= iov[first].iov_len)
			n -= (ssize_t)iov[first++].iov_len;
		if (first < count) {
			iov[first].iov_base = (char *)iov[first].iov_base + n;
			iov[first].iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* A state write failed: the run is failed, and says why once. */
static void state_write_failed(run_state *st)
{
	if (!st->state_failed) {
		st->state_failed = 1;
		st->state_error = faucet__sprintf("storing the state: %s", faucet_error_last()->message);
		fprintf(stderr, "faucet: run: cannot store the state at %s: %s\n",
			st->state_key, faucet_error_last()->message);
	}
	if (faucet_error_last()->code == FAUCET_ELEASELOST)
		st->lease_lost = 1;
}

static void store_state(run_state *st)
{
	faucet_value *v = cli_singer_take_state(&st->cap);

	if (v == NULL)
		return;
	if (faucet_run_put(st->run, st->state_key, v) != 0)
		state_write_failed(st);
	else
		st->stored = 1;
	faucet_value_free(v);
	st->last_state_ms = faucet__now_ms();
}

/* A bad state line fails the run, and a failed capture stores nothing: a
 * state stored before the bad line came is taken back, the bookmark put
 * back as the run found it. */
static void put_back_state(run_state *st)
{
	int rc;

	if (st->cap.error == NULL || !st->stored || st->lease_lost)
		return;
	rc = st->before != NULL ? faucet_run_put(st->run, st->state_key, st->before)
				: faucet_run_delete(st->run, st->state_key);
	if (rc != 0)
		state_write_failed(st);
	else
		fprintf(stderr, "faucet: run: a bad state line: %s is put back as it was before "
				"the run\n", st->state_key);
}

static void read_output(run_state *st)
{
	/* As large as the pipe (spawn_command): a chatty command's output is
	 * taken in as few reads, and written in as few writes, as it can be. */
	static char buf[1 << 20];

	for (;;) {
		ssize_t n = read(st->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			(void)cli_singer_finish(&st->cap);
			close(st->out_fd);
			st->out_fd = -1;
			return;
		}
		if (cli_singer_feed(&st->cap, buf, (size_t)n) != 0 && !st->state_failed) {
			st->state_failed = 1;
			st->state_error = faucet__strdup(faucet_error_last()->message);
		}
		/* A short read drained the pipe: back to poll() rather than one
		 * more read() that would only say EAGAIN. */
		if ((size_t)n < sizeof(buf))
			return;
	}
}

static void on_signals(run_state *st)
{
	unsigned char b[64];
	ssize_t n;

	while ((n = read(st->sig_fds[0], b, sizeof(b))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			int signo = b[i];

			if (signo == SIGCHLD) {
				st->reap = 1;
				continue;
			}
			if (st->interrupted == 0) {
				st->interrupted = signo;
				st->kill_at_ms = faucet__now_ms() + KILL_GRACE_MS;
			}
			/* To the whole group: the command's own children too. */
			if (st->pid > 0 && !st->child_done)
				(void)kill(-st->pid, signo);
		}
	}
}

/* Whether the command has ended (block: wait until it has).  If so, what it left running in its group
 * is killed - before the command is reaped, while it still holds the
 * group's id, so the id cannot have passed to another group - and then it
 * is reaped. */
static int command_ended(run_state *st, int block)
{
	siginfo_t info;

	memset(&info, 0, sizeof(info));
	if (waitid(P_PID, (id_t)st->pid, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0) {
		if (errno == EINTR)
			return 0;
		/* ECHILD: reaped already, which only we do.  Say so and end. */
		fprintf(stderr, "faucet: run: cannot wait for the command: %s\n", strerror(errno));
		st->child_status = 127 << 8;
		return 1;
	}
	if (info.si_pid != st->pid)
		return 0;
	(void)kill(-st->pid, SIGKILL);
	while (waitpid(st->pid, &st->child_status, 0) < 0) {
		if (errno != EINTR) {
			st->child_status = 127 << 8;
			break;
		}
	}
	stop_watchdog(st);
	return 1;
}

static void renew(run_state *st)
{
	if (faucet_run_renew(st->run) != 0) {
		fprintf(stderr, "faucet: run: %s; stopping the command\n", faucet_error_last()->message);
		if (faucet_error_last()->code == FAUCET_ELEASELOST) {
			st->lease_lost = 1;
			if (!st->child_done) {
				(void)kill(-st->pid, SIGTERM);
				if (st->kill_at_ms == 0)
					st->kill_at_ms = faucet__now_ms() + KILL_GRACE_MS;
			}
		}
	}
	st->renew_at_ms = faucet__now_ms() + faucet_run_renew_interval_ms(st->run);
}

static void wait_loop(run_state *st)
{
	st->renew_at_ms = faucet__now_ms() + faucet_run_renew_interval_ms(st->run);
	st->reap = 1; /* the command may have ended before the loop began */
	while (!st->child_done || st->out_fd >= 0) {
		struct pollfd fds[2];
		nfds_t nf = 0;
		uint64_t now = faucet__now_ms(), due = st->renew_at_ms;
		int timeout;

		if (!st->child_done && st->reap) {
			st->reap = 0;
			if (command_ended(st, 0)) {
				st->child_done = 1;
				continue;
			}
		}
		if (!st->child_done && st->kill_at_ms != 0) {
			if (now >= st->kill_at_ms) {
				fprintf(stderr, "faucet: run: the command did not end %d s after the "
						"signal; killing it\n", KILL_GRACE_MS / 1000);
				(void)kill(-st->pid, SIGKILL);
				st->kill_at_ms = 0;
				continue;
			}
			due = st->kill_at_ms < due ? st->kill_at_ms : due;
		}
		if (st->a->singer && st->cap.state != NULL) {
			uint64_t at = st->last_state_ms + STATE_WRITE_INTERVAL_MS;
			if (st->last_state_ms == 0 || at <= now) {
				store_state(st);
				continue;
			}
			due = at < due ? at : due;
		}
		if (now >= st->renew_at_ms && !st->lease_lost) {
			renew(st);
			continue;
		}
		fds[nf++] = (struct pollfd){st->sig_fds[0], POLLIN, 0};
		if (st->out_fd >= 0)
			fds[nf++] = (struct pollfd){st->out_fd, POLLIN, 0};
		timeout = due > now ? (int)(due - now < INT_MAX ? due - now : INT_MAX) : 0;
		if (st->lease_lost && timeout > 1000)
			timeout = 1000;
		if (poll(fds, nf, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "faucet: run: poll: %s; stopping the command\n", strerror(errno));
			break;
		}
		if (fds[0].revents)
			on_signals(st);
		if (nf > 1 && fds[1].revents)
			read_output(st);
	}
	if (!st->child_done) {
		/* Only after poll failed: the run cannot go on watching. */
		(void)kill(-st->pid, SIGKILL);
		while (!command_ended(st, 1))
			;
		st->child_done = 1;
	}
	if (st->a->singer) {
		store_state(st); /* always the last one, whatever the exit status */
		put_back_state(st);
	}
}

/* ---- the command ----------------------------------------------------------------------------- */

static int outcome_and_exit(run_state *st, char *msg, size_t size, int *exit_status)
{
	*exit_status = faucet_proc_exit_code(st->child_status);
	if (WIFSIGNALED(st->child_status)) {
		int sig = WTERMSIG(st->child_status);
		(void)snprintf(msg, size, "killed by signal %d (%s)", sig, strsignal(sig));
	} else if (*exit_status != 0) {
		(void)snprintf(msg, size, "exit status %d", *exit_status);
	}
	return st->interrupted ? 128 + st->interrupted : *exit_status;
}

/* `faucet run --json`: one summary object, the last line of stdout (after
 * everything the command printed there). */
static int print_run_summary(run_state *st, const char *outcome, int exit_status, int code,
			     size_t changed, const char *message)
{
	char *undo = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	if (changed > 0 && (undo = faucet__sprintf("faucet state undo %s --row %s %s", st->pipeline,
					       st->row, faucet_run_id(st->run))) == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	(void)fflush(stdout);
	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "run", 1);
	faucet__json_string(&b, faucet_run_id(st->run));
	cli_jw_member(&b, "pipeline", 0);
	faucet__json_string(&b, st->pipeline);
	cli_jw_member(&b, "row", 0);
	faucet__json_string(&b, st->row);
	cli_jw_member(&b, "outcome", 0);
	faucet__json_string(&b, outcome);
	cli_jw_member(&b, "exit_status", 0);
	(void)faucet__buf_printf(&b, "%d", exit_status);
	cli_jw_member(&b, "exit", 0);
	(void)faucet__buf_printf(&b, "%d", code);
	cli_jw_member(&b, "keys_changed", 0);
	(void)faucet__buf_printf(&b, "%zu", changed);
	cli_jw_member(&b, "state_stored", 0);
	(void)faucet__buf_puts(&b, st->stored ? "true" : "false");
	cli_jw_member(&b, "message", 0);
	faucet__json_string(&b, message);
	cli_jw_member(&b, "undo", 0);
	faucet__json_string(&b, undo);
	(void)faucet__buf_putc(&b, '}');
	free(undo);
	return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

static int finish_run(run_state *st)
{
	char msg[512] = "", undo_hint[FAUCET_KEY_MAX * 2];
	int exit_status, code = outcome_and_exit(st, msg, sizeof(msg), &exit_status);
	int failed = code != 0 || st->state_failed || st->cap.error != NULL;

	if (st->cap.error != NULL && msg[0] == '\0')
		(void)snprintf(msg, sizeof(msg), "%lu bad state line(s); first: %s", st->cap.errors,
			       st->cap.error);
	else if (st->state_error != NULL && msg[0] == '\0')
		(void)snprintf(msg, sizeof(msg), "%s", st->state_error);
	if (st->lease_lost) {
		code = code ? code : CLI_EXIT_FAILED;
		(void)snprintf(msg, sizeof(msg), "run %s lost its lease on %s; its outcome is not "
			       "recorded", faucet_run_id(st->run), faucet_run_scope(st->run));
		fprintf(stderr, "faucet: %s\n", msg);
		if (st->ctx->json)
			(void)print_run_summary(st, "lost", exit_status, code, 0, msg);
		return code;
	}
	if (faucet_run_end(st->run, failed ? FAUCET_RUN_FAILED : FAUCET_RUN_OK, exit_status,
			   msg[0] ? msg : NULL) != 0)
		return cli_fail(code ? code : CLI_EXIT_FAILED, "run %s: recording the outcome",
				faucet_run_id(st->run));
	/* A run that changed nothing has nothing to undo: no hint. */
	if (faucet_run_changed(st->run) > 0)
		(void)snprintf(undo_hint, sizeof(undo_hint), "; undo: faucet state undo %s --row "
			       "%s %s", st->pipeline, st->row, faucet_run_id(st->run));
	else
		(void)snprintf(undo_hint, sizeof(undo_hint), "; it changed nothing");
	/* With -q or --json only a failure is said on stderr. */
	if (failed || (!st->ctx->quiet && !st->ctx->json))
		fprintf(stderr, "faucet: run %s %s%s%s%s\n", faucet_run_id(st->run),
			failed ? "failed" : "ok", msg[0] ? ": " : "", msg,
			failed && (st->ctx->quiet || st->ctx->json) ? "" : undo_hint);
	/* The command succeeded but a state it printed could not be stored. */
	if (code == 0 && failed)
		code = CLI_EXIT_FAILED;
	if (st->ctx->json &&
	    print_run_summary(st, failed ? "failed" : "ok", exit_status, code,
			      faucet_run_changed(st->run), msg[0] ? msg : NULL) != 0 &&
	    code == 0)
		code = CLI_EXIT_FAILED;
	return code;
}

/* This faucet binary's absolute path (FAUCET_BIN: a command can run the
 * same faucet, whatever PATH says). */
static int self_path(char **out)
{
	size_t size = 256;

	for (;;) {
		char *buf = faucet__malloc(size);
		ssize_t n;

		if (buf == NULL)
			return cli_fail(CLI_EXIT_FAILED, "run");
		n = readlink("/proc/self/exe", buf, size);
		if (n < 0) {
			int err = errno;
			free(buf);
			return cli_error(CLI_EXIT_FAILED, "run: cannot find faucet's own path "
					 "(/proc/self/exe) for FAUCET_BIN: %s", strerror(err));
		}
		if ((size_t)n < size) {
			buf[n] = '\0';
			*out = buf;
			return 0;
		}
		free(buf);
		if (size > ((size_t)1 << 20))
			return cli_error(CLI_EXIT_FAILED, "run: faucet's own path is too long");
		size *= 2;
	}
}

static int resolve(run_state *st)
{
	cli_context *ctx = st->ctx;
	run_args *a = st->a;
	const faucet_config *cfg = NULL;
	int rc;

	if (a->command.count == 0)
		return cli_usage_error("run", "no command: give one after --");
	if ((rc = cli_context_config(ctx, &cfg)) != 0)
		return rc;
	st->pipeline = a->pipeline ? a->pipeline : (cfg ? faucet_config_name(cfg) : NULL);
	if (st->pipeline == NULL)
		return cli_usage_error("run", "which pipeline? give --pipeline or -c FILE");
	st->row = a->row ? a->row : FAUCET_RUN_DEFAULT_ROW;
	st->state_key = faucet__sprintf("%s::%s", st->pipeline, st->row);
	if (st->state_key == NULL)
		return cli_fail(CLI_EXIT_FAILED, "run");
	if (faucet_validate_key(st->state_key) != 0 || strstr(st->pipeline, "::") != NULL ||
	    faucet_run_is_bookkeeping_key(st->state_key))
		return cli_usage_error("run", "invalid pipeline or row: '%s'", st->state_key);
	if (faucet_proc_find(a->command.strings[0], &st->exe) == FAUCET_ENOMEM)
		return cli_fail(CLI_EXIT_FAILED, "run");
	if (st->exe == NULL)
		return cli_error(CLI_EXIT_USAGE, "run: command '%s' not found%s (nothing was run)",
				 a->command.strings[0],
				 strchr(a->command.strings[0], '/') ? " or not executable" : " on PATH");
	st->command_line = join_command(&a->command);
	if (st->command_line == NULL)
		return cli_fail(CLI_EXIT_FAILED, "run");
	return self_path(&st->self);
}

int cli_run_main(cli_context *ctx, int argc, char **argv)
{
	run_args a;
	run_state st;
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	unsigned long long ms;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&st, 0, sizeof(st));
	st.ctx = ctx;
	st.a = &a;
	st.out_fd = -1;
	st.sig_fds[0] = st.sig_fds[1] = -1;
	cli_singer_init(&st.cap, emit_stdout, NULL);

	rc = parse_args(ctx, argc, argv, &a);
	if (rc == 0 && a.lease_ttl != NULL &&
	    (rc = cli_duration_option("run", "--lease-ttl", a.lease_ttl, 1000, CLI_LEASE_MAX_MS,
				      &ms)) == 0)
		o.lease_ttl_ms = ms;
	if (rc == 0 && a.wait_given) {
		if (a.wait == NULL)
			o.wait_ms = FAUCET_RUN_WAIT_FOREVER;
		else if (*a.wait == '\0')
			rc = cli_usage_error("run", "--wait= needs a duration, e.g. --wait=30s "
					     "(--wait alone waits without a limit)");
		else if ((rc = cli_duration_option("run", "--wait", a.wait, 1, CLI_LEASE_MAX_MS,
						   &ms)) == 0)
			o.wait_ms = ms;
	}
	if (rc == 0)
		rc = resolve(&st);
	if (rc == 0)
		rc = cli_open_store(ctx, &st.s);
	if (rc == 0) {
		o.row = st.row;
		o.command = st.command_line;
		if (faucet_run_begin(&st.run, st.s, st.pipeline, &o) != 0) {
			int busy = faucet_error_last()->code == FAUCET_EBUSY;
			rc = cli_fail(busy ? CLI_EXIT_BUSY
					   : faucet_error_last()->code == FAUCET_EINVALID ? CLI_EXIT_USAGE
											  : CLI_EXIT_FAILED,
				      "run");
		}
	}
	if (rc == 0) {
		if (!ctx->quiet && !ctx->json)
			fprintf(stderr, "faucet: run %s of %s started\n", faucet_run_id(st.run),
				st.state_key);
		if (install_signals(st.sig_fds) != 0)
			rc = cli_error(CLI_EXIT_FAILED, "run: cannot set up signals: %s", strerror(errno));
		if (rc == 0 && a.singer)
			rc = write_state_file(&st);
		if (rc == 0)
			rc = spawn_command(&st);
		if (rc == 0) {
			wait_loop(&st);
			rc = finish_run(&st);
		} else {
			/* The command never ran: record that, and let the invocation go. */
			(void)faucet_run_end(st.run, FAUCET_RUN_FAILED, -1, "the command could not be started");
		}
	}
	if (rc == -1) /* --help */
		rc = 0;
	if (st.state_file != NULL)
		(void)unlink(st.state_file);
	if (st.out_fd >= 0)
		close(st.out_fd);
	cli_singer_dispose(&st.cap);
	faucet_run_free(st.run);
	faucet_store_free(st.s);
	faucet_strarray_dispose(&a.command);
	free(st.state_file);
	faucet_value_free(st.before);
	free(st.state_key);
	free(st.exe);
	free(st.self);
	free(st.command_line);
	free(st.state_error);
	return rc;
}
