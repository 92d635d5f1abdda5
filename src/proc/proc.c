/*
 * proc.c - the one process supervisor (faucet/proc.h, doc/design.md §12):
 * PATH lookup, the command's environment, spawning without a shell, the
 * watchdog, exit statuses.  `faucet run`, backfill units and embedders
 * start commands only through here.
 *
 * Between fork and execve the child may only make async-signal-safe calls
 * on what the parent prepared: the caller may have threads, and another
 * thread may hold malloc's or stdio's lock at the moment of the fork.  So
 * the path is resolved, argv and envp are built and every descriptor the
 * child needs is placed above 2 before the fork; a failed execve sends its
 * errno back through a close-on-exec pipe (end of file there means the exec
 * succeeded), never as a guess from exit status 127.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "faucet/proc.h"

extern char **environ;

/* Each version's size of faucet_proc_options. */
static const size_t proc_options_sizes[] = {sizeof(faucet_proc_options)};

int faucet_proc_options_init(faucet_proc_options *o, unsigned int version)
{
	static const faucet_proc_options defaults = FAUCET_PROC_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, proc_options_sizes, version,
				    FAUCET_PROC_OPTIONS_VERSION, "faucet_proc_options");
}

/* ---- finding the command ---------------------------------------------------------------- */

static int executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int faucet_proc_find(const char *name, char **out)
{
	const char *path = getenv("PATH"), *p;

	*out = NULL;
	if (name == NULL || *name == '\0')
		return faucet_error_set(FAUCET_EINVALID, "no command given");
	if (strchr(name, '/') != NULL) {
		if (!executable_file(name))
			return faucet_error_set(FAUCET_ENOTFOUND, "command '%s' does not exist "
						"or is not executable", name);
		*out = faucet__strdup(name);
		return *out != NULL ? 0 : FAUCET_ENOMEM;
	}
	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		/* An empty entry is the current directory, as for execvp. */
		char *candidate = len ? faucet__sprintf("%.*s/%s", (int)len, p, name)
				      : faucet__sprintf("./%s", name);

		if (candidate == NULL)
			return FAUCET_ENOMEM;
		if (executable_file(candidate)) {
			*out = candidate;
			return 0;
		}
		free(candidate);
		if (end == NULL)
			return faucet_error_set(FAUCET_ENOTFOUND, "command '%s' was not found "
						"on PATH", name);
		p = end;
	}
}

/* ---- the environment --------------------------------------------------------------------- */

/* Whether `entry` ("NAME=VALUE") sets the variable named by `name`, which
 * is either a bare name or a "NAME=..." entry itself. */
static int sets(const char *entry, const char *name)
{
	size_t len = strcspn(name, "=");

	return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static int dropped(const char *entry, const char *const *drop, const char *const *set)
{
	for (size_t i = 0; drop != NULL && drop[i] != NULL; i++)
		if (sets(entry, drop[i]))
			return 1;
	for (size_t i = 0; set != NULL && set[i] != NULL; i++)
		if (sets(entry, set[i]))
			return 1;
	return 0;
}

int faucet_proc_env(const char *const *drop, const char *const *set, char ***out)
{
	size_t n = 0, nset = 0, bytes = 0, k = 0;
	char **env, *text;

	*out = NULL;
	while (environ != NULL && environ[n] != NULL)
		n++;
	while (set != NULL && set[nset] != NULL) {
		if (strchr(set[nset], '=') == NULL || set[nset][0] == '=')
			return faucet_error_set(FAUCET_EINVALID, "not a NAME=VALUE entry: '%s'",
						set[nset]);
		bytes += strlen(set[nset]) + 1;
		nset++;
	}
	/* The pointers, then copies of `set`'s strings, in one block. */
	env = faucet__calloc(1, (n + nset + 1) * sizeof(*env) + bytes);
	if (env == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!dropped(environ[i], drop, set))
			env[k++] = environ[i];
	text = (char *)(env + n + nset + 1);
	for (size_t i = 0; i < nset; i++) {
		size_t len = strlen(set[i]) + 1;
		memcpy(text, set[i], len);
		env[k++] = text;
		text += len;
	}
	env[k] = NULL;
	*out = env;
	return 0;
}

/* ---- spawning -------------------------------------------------------------------------------- */

/* The signals faucet's programs catch or ignore: the command starts with
 * each at its default (an ignored SIGPIPE would survive execve). */
static const int reset_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE};

/* fork without the atfork handlers where the C library allows it (glibc
 * 2.34's _Fork): they are the embedding program's code, and the child only
 * execs. */
static pid_t fork_child(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	return _Fork();
#else
	return fork();
#endif
}

typedef struct {
	const faucet_proc_options *o;
	char *const *envp;
	int fd[3];        /* the child's 0, 1, 2: above 2, or -1 = inherited */
	int report;       /* the write end of the exec report */
	int go;           /* the read end of the go-ahead, or -1: exec at once */
	sigset_t mask;    /* the child's signal mask */
	pid_t parent;
} child_plan;

/* A one-way channel to a child (the go-ahead, the watchdog's): [0] the
 * child's end, [1] the parent's, close-on-exec.  A socket pair rather than
 * a pipe, so that a byte sent to a child that died is no SIGPIPE for the
 * caller (tell).  The child reads end of file once [1] is closed. */
static int channel(int ends[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends);
}

/* One byte to the child's end; a child gone already is no error. */
static void tell(int fd, char byte)
{
	(void)!send(fd, &byte, 1, MSG_NOSIGNAL);
}

/* In the child: wait for the parent's one byte (its watchdog is in
 * place); end of file means the parent is gone. */
static int go_ahead(int fd)
{
	char b;
	ssize_t n;

	do
		n = read(fd, &b, 1);
	while (n < 0 && errno == EINTR);
	return n == 1;
}

/* In the child: only async-signal-safe calls.  Signals are all blocked on
 * entry (see faucet_proc_spawn), so no handler of the caller's runs here;
 * the mask is set only once the dispositions are back to the defaults. */
static void child_exec(const child_plan *c)
{
	struct sigaction dfl;
	int e;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(reset_signals); i++)
		(void)sigaction(reset_signals[i], &dfl, NULL);
	/* Its own group: signals sent to the group reach every process the
	 * command starts, and what it leaves behind can be killed as one. */
	(void)setpgid(0, 0);
	if (c->o->flags & FAUCET_PROC_DIE_WITH_PARENT) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			goto fail;
		/* The parent died before that took effect: we are another's. */
		if (getppid() != c->parent)
			_exit(127);
	}
	if (c->go >= 0 && !go_ahead(c->go))
		_exit(127); /* the parent died before its watchdog was in place */
	/* Every source is above 2 (faucet_proc_spawn), so no dup2 overwrites
	 * another's source; dup2 clears close-on-exec on the copy. */
	for (int i = 0; i < 3; i++)
		if (c->fd[i] >= 0 && dup2(c->fd[i], i) < 0)
			goto fail;
	(void)sigprocmask(SIG_SETMASK, &c->mask, NULL);
	(void)execve(c->o->path, c->o->argv, c->envp);
fail:
	e = errno;
	(void)!write(c->report, &e, sizeof(e));
	_exit(127);
}

/* A close-on-exec copy of `fd` above 2, in *out (-1 for -1). */
static int above_stdio(int fd, int *out)
{
	*out = -1;
	if (fd < 0)
		return 0;
	*out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return *out >= 0 ? 0 : -1;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fds[i] >= 0)
			(void)close(fds[i]);
		fds[i] = -1;
	}
}

/* Wait for the child to exec or fail: *exec_errno = 0 when it ran the
 * command; set (and the child reaped) when it could not. */
static void read_exec_report(int report, pid_t pid, int *exec_errno)
{
	int e = 0, status;
	ssize_t n;

	do
		n = read(report, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	*exec_errno = 0;
	if (n != (ssize_t)sizeof(e))
		return; /* end of file: the exec closed the pipe */
	*exec_errno = e != 0 ? e : EIO;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* With `watchdog`, start one for the child's group, then let the child go
 * on to its exec (the go-ahead's write end, closed here either way).  A
 * watchdog that cannot start leaves the command unwatched, not unrun. */
static void watch_then_go(pid_t child, int *go, faucet_proc_watchdog **watchdog)
{
	if (watchdog == NULL)
		return;
	if (faucet_proc_watchdog_start(child, watchdog) != 0)
		faucet_error_clear();
	tell(go[1], 'g');
	close_all(&go[1], 1);
}

static int spawn(const faucet_proc_options *caller, pid_t *pid, int *exec_errno,
		 faucet_proc_watchdog **watchdog)
{
	faucet_proc_options opts;
	const faucet_proc_options *o = &opts;
	child_plan c;
	int rep[2] = {-1, -1}, go[2] = {-1, -1}, mine[3] = {-1, -1, -1}, err = 0;
	sigset_t all, old;
	pid_t child;

	*pid = 0;
	*exec_errno = 0;
	if (caller == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_proc_spawn: the options are NULL");
	if (faucet__options_load(&opts, sizeof(opts), caller, proc_options_sizes,
				 FAUCET_PROC_OPTIONS_VERSION, "faucet_proc_options") != 0)
		return FAUCET_EINVALID;
	if (o->path == NULL || o->argv == NULL || o->argv[0] == NULL)
		return faucet_error_set(FAUCET_EINVALID, "process options without a command");
	memset(&c, 0, sizeof(c));
	c.o = o;
	c.envp = o->envp != NULL ? o->envp : environ;
	c.parent = getpid();
	/* A caller running with 0-2 closed can get a pipe numbered 0-2: the
	 * child's dup2 onto it would then be a no-op that leaves it
	 * close-on-exec.  So every source goes above 2 first. */
	if (pipe2(rep, O_CLOEXEC) != 0 || above_stdio(o->fd[0], &mine[0]) != 0 ||
	    above_stdio(o->fd[1], &mine[1]) != 0 || above_stdio(o->fd[2], &mine[2]) != 0 ||
	    (watchdog != NULL && channel(go) != 0)) {
		err = errno;
		close_all(rep, 2);
		close_all(go, 2);
		close_all(mine, 3);
		return faucet__error_os(FAUCET_EIO, err, "cannot start '%s'", o->path);
	}
	if (rep[1] <= 2) {
		int moved = fcntl(rep[1], F_DUPFD_CLOEXEC, 3);
		(void)close(rep[1]);
		rep[1] = moved;
	}
	memcpy(c.fd, mine, sizeof(c.fd));
	c.report = rep[1];
	c.go = go[0]; /* (read once, before any dup2: its number does not matter) */
	/* No handler of the caller's may run in the child before it resets
	 * them; the command gets the caller's mask, but never INT, TERM or HUP
	 * blocked (a program reading them from a signalfd blocks them, and the
	 * command must still stop when it is sent one). */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	c.mask = old;
	(void)sigdelset(&c.mask, SIGINT);
	(void)sigdelset(&c.mask, SIGTERM);
	(void)sigdelset(&c.mask, SIGHUP);
	child = rep[1] >= 0 ? fork_child() : -1;
	if (child == 0)
		child_exec(&c);
	err = errno;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	close_all(mine, 3);
	close_all(&rep[1], 1);
	close_all(&go[0], 1);
	if (child < 0) {
		close_all(rep, 1);
		close_all(&go[1], 1);
		return faucet__error_os(FAUCET_EIO, err, "cannot start '%s'", o->path);
	}
	/* Also here, so the group exists before anyone signals it (whichever
	 * of the two setpgid calls comes second fails harmlessly). */
	(void)setpgid(child, child);
	watch_then_go(child, go, watchdog);
	read_exec_report(rep[0], child, exec_errno);
	close_all(rep, 1);
	if (*exec_errno != 0) {
		if (watchdog != NULL) { /* the child is reaped: nothing to kill */
			faucet_proc_watchdog_stop(*watchdog);
			*watchdog = NULL;
		}
		(void)faucet_error_set(FAUCET_ENOTFOUND, "cannot run '%s': %s", o->path,
				       strerror(*exec_errno));
		return 0;
	}
	*pid = child;
	return 0;
}

int faucet_proc_spawn(const faucet_proc_options *o, pid_t *pid, int *exec_errno)
{
	return spawn(o, pid, exec_errno, NULL);
}

int faucet_proc_spawn_watched(const faucet_proc_options *o, pid_t *pid, int *exec_errno,
			      faucet_proc_watchdog **watchdog)
{
	if (watchdog == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_proc_spawn_watched: watchdog is NULL");
	*watchdog = NULL;
	return spawn(o, pid, exec_errno, watchdog);
}

int faucet_proc_exit_code(int wait_status)
{
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	return 128 + (WIFSTOPPED(wait_status) ? WSTOPSIG(wait_status) : 0);
}

/* ---- the watchdog ----------------------------------------------------------------------------- */

/*
 * A small process of the caller's (outside the command's group) holding the
 * read end of a pipe whose write end only the caller has.  When the caller
 * goes - killed outright included - the pipe reads end-of-file and the
 * watchdog kills the command's whole group: the command's own children die
 * too, which the parent-death signal of the command alone cannot do.  Once
 * the command has been reaped the caller writes one byte first, and the
 * watchdog leaves without killing (the group id may be reused).
 */
struct faucet_proc_watchdog {
	int fd;
	pid_t pid;
};

static void watchdog_main(int rfd, pid_t group, pid_t parent)
{
	sigset_t all;
	char c;
	ssize_t n;

	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL); /* only SIGKILL ends it early */
	/* Hold nothing of the caller's: no pipe of theirs may stay open
	 * because of us (the command's output, the caller's own stdout). */
	if (dup2(rfd, STDIN_FILENO) < 0)
		_exit(0);
	(void)close_range(STDERR_FILENO + 1, ~0U, 0);
	(void)close(STDOUT_FILENO);
	(void)close(STDERR_FILENO);
	if (getppid() != parent) /* the caller died before we could watch it */
		(void)kill(-group, SIGKILL);
	do
		n = read(STDIN_FILENO, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		(void)kill(-group, SIGKILL);
	_exit(0);
}

int faucet_proc_watchdog_start(pid_t group, faucet_proc_watchdog **out)
{
	faucet_proc_watchdog *w;
	int fds[2], err;
	pid_t parent = getpid();

	*out = NULL;
	if (group <= 0)
		return faucet_error_set(FAUCET_EINVALID, "no process group to watch");
	w = faucet__calloc(1, sizeof(*w));
	if (w == NULL)
		return FAUCET_ENOMEM;
	if (channel(fds) != 0) {
		err = errno;
		free(w);
		return faucet__error_os(FAUCET_EIO, err, "cannot start a watchdog");
	}
	w->pid = fork_child();
	if (w->pid == 0) {
		(void)close(fds[1]);
		watchdog_main(fds[0], group, parent);
	}
	err = errno;
	(void)close(fds[0]);
	if (w->pid < 0) {
		(void)close(fds[1]);
		free(w);
		return faucet__error_os(FAUCET_EIO, err, "cannot start a watchdog");
	}
	w->fd = fds[1];
	*out = w;
	return 0;
}

void faucet_proc_watchdog_stop(faucet_proc_watchdog *w)
{
	if (w == NULL)
		return;
	tell(w->fd, 'd');
	(void)close(w->fd);
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(w);
}
