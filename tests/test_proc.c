/*
 * test_proc.c - the process supervisor (faucet/proc.h): PATH lookup, the
 * command's environment, spawning (descriptors, signals, exec failures),
 * exit statuses, and the watchdog that kills a whole group when its owner
 * dies.  Each promise is checked by what a real child process sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include <faucet/proc.h>

extern char **environ;

static char *write_script(const char *dir, const char *name, const char *body, mode_t mode)
{
	char *path = NULL;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

/* Run `sh -c script` with options `o` (path/argv filled here); its stdout
 * in *out (caller frees), its wait status returned. */
static int run_argv(faucet_proc_options *o, char **argv, char **out)
{
	int fds[2], status = 0, exec_errno = -1;
	pid_t pid = 0;
	char buf[4096], *exe = NULL;
	size_t len = 0;
	ssize_t n;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	assert_int_equal(faucet_proc_find(argv[0], &exe), 0);
	o->path = exe;
	o->argv = argv;
	o->fd[1] = fds[1];
	assert_int_equal(faucet_proc_spawn(o, &pid, &exec_errno), 0);
	assert_int_equal(exec_errno, 0);
	assert_true(pid > 0);
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	buf[len] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = strdup(buf);
	free(exe);
	return status;
}

static int run_sh(faucet_proc_options *o, const char *script, char **out)
{
	return run_argv(o, (char *[]){"sh", "-c", (char *)script, NULL}, out);
}

static void test_find(void **state)
{
	char *dir = tu_tempdir(), *script, *plain, *found = NULL, *saved, *path_env = NULL;
	const char *old = getenv("PATH");
	char cwd[4096];

	(void)state;
	script = write_script(dir, "faucet-proc-tool", "exit 0", 0755);
	plain = write_script(dir, "not-executable", "exit 0", 0644);
	saved = strdup(old != NULL ? old : "");
	assert_true(asprintf(&path_env, "/nonexistent:%s:/usr/bin", dir) > 0);
	setenv("PATH", path_env, 1);
	assert_int_equal(faucet_proc_find("faucet-proc-tool", &found), 0);
	assert_string_equal(found, script);
	free(found);
	/* Not on PATH, not executable, a directory: each a clear ENOTFOUND. */
	assert_int_equal(faucet_proc_find("no-such-tool-xyz", &found), FAUCET_ENOTFOUND);
	assert_null(found);
	assert_non_null(strstr(faucet_error_last()->message, "not found on PATH"));
	assert_int_equal(faucet_proc_find("not-executable", &found), FAUCET_ENOTFOUND);
	assert_int_equal(faucet_proc_find(plain, &found), FAUCET_ENOTFOUND);
	assert_non_null(strstr(faucet_error_last()->message, "not executable"));
	assert_int_equal(faucet_proc_find(dir, &found), FAUCET_ENOTFOUND);
	assert_int_equal(faucet_proc_find("", &found), FAUCET_EINVALID);
	/* A path is taken as it is. */
	assert_int_equal(faucet_proc_find(script, &found), 0);
	assert_string_equal(found, script);
	free(found);
	/* An empty PATH entry is the current directory, as for execvp. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	setenv("PATH", "/nonexistent::/usr/bin", 1);
	assert_int_equal(faucet_proc_find("faucet-proc-tool", &found), 0);
	assert_string_equal(found, "./faucet-proc-tool");
	free(found);
	assert_int_equal(chdir(cwd), 0);
	setenv("PATH", saved, 1);
	free(saved);
	free(path_env);
	free(script);
	free(plain);
	tu_rmrf(dir);
	free(dir);
}

static int env_has(char **env, const char *entry)
{
	for (size_t i = 0; env[i] != NULL; i++)
		if (strcmp(env[i], entry) == 0)
			return 1;
	return 0;
}

static int env_count(char **env, const char *name)
{
	size_t len = strlen(name);
	int n = 0;

	for (size_t i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			n++;
	return n;
}

static void test_env(void **state)
{
	const char *drop[] = {"PROC_TEST_DROP", NULL};
	const char *set[] = {"PROC_TEST_SET=new", "PROC_TEST_ADD=a=b", NULL};
	const char *bad[] = {"NOEQUALS", NULL};
	char **env = NULL;

	(void)state;
	setenv("PROC_TEST_DROP", "x", 1);
	setenv("PROC_TEST_SET", "old", 1);
	setenv("PROC_TEST_KEEP", "kept", 1);
	assert_int_equal(faucet_proc_env(drop, set, &env), 0);
	assert_int_equal(env_count(env, "PROC_TEST_DROP"), 0);
	assert_int_equal(env_count(env, "PROC_TEST_SET"), 1); /* replaced, not doubled */
	assert_true(env_has(env, "PROC_TEST_SET=new"));
	assert_true(env_has(env, "PROC_TEST_ADD=a=b"));
	assert_true(env_has(env, "PROC_TEST_KEEP=kept"));
	free(env);
	assert_int_equal(faucet_proc_env(NULL, NULL, &env), 0);
	assert_true(env_has(env, "PROC_TEST_DROP=x"));
	free(env);
	assert_int_equal(faucet_proc_env(NULL, bad, &env), FAUCET_EINVALID);
	assert_null(env);
	unsetenv("PROC_TEST_DROP");
	unsetenv("PROC_TEST_SET");
	unsetenv("PROC_TEST_KEEP");
}

static void test_spawn_env_and_group(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	char *env[] = {"ONLY_THIS=1", NULL};
	char *out = NULL, *want = NULL;
	int status;

	(void)state;
	o.envp = env;
	status = run_sh(&o, "echo \"$ONLY_THIS:${HOME:-unset}\"; ps -o pgid= -p $$", &out);
	assert_int_equal(faucet_proc_exit_code(status), 0);
	/* The environment given, nothing else; the child leads its own group. */
	assert_int_equal(strncmp(out, "1:unset\n", 8), 0);
	assert_true(atol(out + 8) > 0);
	assert_int_not_equal(atol(out + 8), (long)getpgrp());
	free(out);
	free(want);
}

static void test_spawn_signals(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	sigset_t block, old;
	char *out = NULL;
	int status;

	(void)state;
	/* A caller that ignores SIGPIPE and blocks SIGTERM (as a program
	 * reading signals from a signalfd does) and SIGUSR1: the command gets
	 * SIGPIPE at its default and SIGTERM unblocked, the caller's other
	 * blocked signals still blocked. */
	(void)signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
	status = run_argv(&o, (char *[]){"grep", "-E", "^(SigIgn|SigBlk):", "/proc/self/status",
					 NULL}, &out);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	(void)signal(SIGPIPE, SIG_DFL);
	assert_int_equal(faucet_proc_exit_code(status), 0);
	{
		unsigned long long ign = 0, blk = 0;
		const char *i = strstr(out, "SigIgn:"), *b = strstr(out, "SigBlk:");
		assert_non_null(i);
		assert_non_null(b);
		ign = strtoull(i + 7, NULL, 16);
		blk = strtoull(b + 7, NULL, 16);
		assert_false(ign & (1ULL << (SIGPIPE - 1)));
		assert_false(blk & (1ULL << (SIGTERM - 1)));
		assert_true(blk & (1ULL << (SIGUSR1 - 1)));
	}
	free(out);
}

/* A caller with stdin, stdout and stderr closed gets pipes numbered 0-2:
 * the child must still see them on the right descriptors. */
static void test_spawn_low_descriptors(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
		char *argv[] = {"sh", "-c", "echo out-line; echo err-line >&2", NULL};
		int out[2], err[2], exec_errno = 0, st = 0;
		pid_t child = 0;
		char buf[64] = {0};

		close(0);
		close(1);
		close(2);
		if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
			_exit(10);
		if (out[0] > 2 && out[1] > 2)
			_exit(11); /* the case under test did not arise */
		o.path = "/bin/sh";
		o.argv = argv;
		o.fd[1] = out[1];
		o.fd[2] = err[1];
		if (faucet_proc_spawn(&o, &child, &exec_errno) != 0 || exec_errno != 0)
			_exit(12);
		close(out[1]);
		close(err[1]);
		if (read(out[0], buf, sizeof(buf) - 1) != 9 || strcmp(buf, "out-line\n") != 0)
			_exit(13);
		memset(buf, 0, sizeof(buf));
		if (read(err[0], buf, sizeof(buf) - 1) != 9 || strcmp(buf, "err-line\n") != 0)
			_exit(14);
		if (waitpid(child, &st, 0) != child || faucet_proc_exit_code(st) != 0)
			_exit(15);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* 1x: the step that failed */
}

static void test_exec_failure(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	char *dir = tu_tempdir(), *plain, *argv[] = {"x", NULL};
	int exec_errno = 0;
	pid_t pid = 1;

	(void)state;
	plain = write_script(dir, "plain", "exit 0", 0644);
	o.path = plain;
	o.argv = argv;
	/* Not executable: an errno, not exit status 127; no child left. */
	assert_int_equal(faucet_proc_spawn(&o, &pid, &exec_errno), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(exec_errno, EACCES);
	assert_non_null(strstr(faucet_error_last()->message, "cannot run"));
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	o.path = "/nonexistent/tool";
	assert_int_equal(faucet_proc_spawn(&o, &pid, &exec_errno), 0);
	assert_int_equal(exec_errno, ENOENT);
	/* Options without a command, or of an unknown version. */
	o.argv = NULL;
	assert_int_equal(faucet_proc_spawn(&o, &pid, &exec_errno), FAUCET_EINVALID);
	o.version = 0; /* read through the same loader as every options struct */
	assert_int_equal(faucet_proc_spawn(&o, &pid, &exec_errno), FAUCET_EINVALID);
	assert_non_null(strstr(faucet_error_last()->message, "faucet_proc_options version 0"));
	assert_int_equal(faucet_proc_options_init(&o, 99), FAUCET_EINVALID);
	assert_int_equal(faucet_proc_options_init(&o, FAUCET_PROC_OPTIONS_VERSION), 0);
	assert_int_equal(o.fd[0], -1);
	free(plain);
	tu_rmrf(dir);
	free(dir);
}

static void test_exit_code(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	char *out = NULL;

	(void)state;
	assert_int_equal(faucet_proc_exit_code(run_sh(&o, "exit 3", &out)), 3);
	free(out);
	o = (faucet_proc_options)FAUCET_PROC_OPTIONS_INIT;
	assert_int_equal(faucet_proc_exit_code(run_sh(&o, "kill -TERM $$", &out)), 128 + SIGTERM);
	free(out);
}

/* Wait (bounded) until process `pid` is gone. */
static int gone_within(pid_t pid, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return 1;
		usleep(10000); /* polling for an outcome, with a deadline */
	}
	return 0;
}

/*
 * An owner process spawns `sh` with DIE_WITH_PARENT and a watchdog; the
 * shell starts a grandchild (`sleep`) and reports both pids.  The owner is
 * then killed outright - only once it says its watchdog is in place, else
 * the kill could come first - the shell dies by the parent-death signal and
 * the grandchild by the watchdog.  With watchdog = 0 the grandchild
 * survives, which shows the test can tell.
 */
static void owner_dies(int watchdog, int *grandchild_gone)
{
	int fds[2], ready[2];
	pid_t owner, sh_pid = 0, sleeper = 0;
	char buf[128] = {0}, c = 0;
	size_t len = 0;
	ssize_t n;

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(ready), 0);
	owner = fork();
	assert_true(owner >= 0);
	if (owner == 0) {
		faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
		faucet_proc_watchdog *w = NULL;
		char *argv[] = {"sh", "-c", "sleep 300 & echo $$ $!; wait", NULL};
		int exec_errno = 0;
		pid_t child = 0;

		close(fds[0]);
		close(ready[0]);
		o.path = "/bin/sh";
		o.argv = argv;
		o.fd[1] = fds[1];
		o.flags = FAUCET_PROC_DIE_WITH_PARENT;
		if (faucet_proc_spawn(&o, &child, &exec_errno) != 0 || exec_errno != 0)
			_exit(1);
		if (watchdog && faucet_proc_watchdog_start(child, &w) != 0)
			_exit(2);
		close(fds[1]);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 && strchr(buf, '\n') == NULL &&
	       (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1); /* the owner's watchdog is in place */
	close(ready[0]);
	assert_int_equal(sscanf(buf, "%d %d", &sh_pid, &sleeper), 2);
	assert_int_equal(kill(owner, SIGKILL), 0);
	assert_int_equal(waitpid(owner, NULL, 0), owner);
	assert_true(gone_within(sh_pid, 10));
	*grandchild_gone = gone_within(sleeper, watchdog ? 10 : 1);
	if (!*grandchild_gone)
		(void)kill(sleeper, SIGKILL);
}

static void test_watchdog(void **state)
{
	int gone = 0;

	(void)state;
	owner_dies(1, &gone);
	assert_true(gone);
	owner_dies(0, &gone);
	assert_false(gone);
}

/* faucet_proc_spawn_watched: the watchdog is there before the command runs
 * - the command's first look at its parent's children finds it beside
 * itself - and a command that cannot run leaves no watchdog behind. */
static void test_spawn_watched(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	faucet_proc_watchdog *w = NULL;
	char *argv[] = {"sh", "-c", "cat /proc/$PPID/task/$PPID/children", NULL};
	char buf[256] = {0};
	int fds[2], exec_errno = 0, status, count = 0;
	size_t len = 0;
	ssize_t n;
	pid_t pid = 0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	o.path = "/bin/sh";
	o.argv = argv;
	o.fd[1] = fds[1];
	o.flags = FAUCET_PROC_DIE_WITH_PARENT;
	assert_int_equal(faucet_proc_spawn_watched(&o, &pid, &exec_errno, &w), 0);
	assert_int_equal(exec_errno, 0);
	assert_non_null(w);
	close(fds[1]);
	while (len < sizeof(buf) - 1 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(faucet_proc_exit_code(status), 0);
	faucet_proc_watchdog_stop(w);
	/* "PID PID ": the command and the watchdog, and nothing else. */
	for (char *p = buf; *p != '\0'; p++)
		count += *p != ' ' && (p[1] == ' ' || p[1] == '\n' || p[1] == '\0');
	assert_int_equal(count, 2);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* the watchdog was reaped */

	argv[0] = "no-such-command";
	o.path = "/nonexistent/no-such-command";
	o.fd[1] = -1;
	w = (faucet_proc_watchdog *)&o; /* overwritten */
	assert_int_equal(faucet_proc_spawn_watched(&o, &pid, &exec_errno, &w), 0);
	assert_int_equal(exec_errno, ENOENT);
	assert_int_equal(pid, 0);
	assert_null(w);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* nothing left to reap */
	assert_int_equal(faucet_proc_spawn_watched(&o, &pid, &exec_errno, NULL), FAUCET_EINVALID);
}

/* This process's children, from /proc (at most `max`). */
static size_t my_children(pid_t *out, size_t max)
{
	char path[64], buf[256] = {0};
	FILE *f;
	size_t n = 0;
	char *p = buf;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fgets(buf, sizeof(buf), f) != NULL || feof(f));
	fclose(f);
	while (n < max && *p != '\0') {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		out[n++] = (pid_t)v;
		p = end;
	}
	return n;
}

/* A watchdog that died before it was stopped (someone killed it): stopping
 * it is no SIGPIPE for the caller, whose default would end it. */
static void test_watchdog_stop_after_it_died(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	faucet_proc_watchdog *w = NULL;
	char *argv[] = {"sleep", "300", NULL};
	pid_t kids[8], pid = 0, dog = 0;
	int exec_errno = 0, status;
	size_t n;

	(void)state;
	o.path = "/bin/sleep";
	o.argv = argv;
	assert_int_equal(faucet_proc_spawn_watched(&o, &pid, &exec_errno, &w), 0);
	assert_non_null(w);
	n = my_children(kids, 8);
	for (size_t i = 0; i < n; i++)
		if (kids[i] != pid)
			dog = kids[i];
	assert_true(dog > 0);
	assert_int_equal(kill(dog, SIGKILL), 0);
	/* Its end of the channel is closed once it is gone (a zombie until
	 * the stop reaps it): wait for that, as the test's only wait. */
	while (kill(dog, 0) == 0) {
		char stat[64], line[256] = {0};
		FILE *f;

		snprintf(stat, sizeof(stat), "/proc/%d/stat", (int)dog);
		f = fopen(stat, "r");
		if (f == NULL)
			break;
		assert_true(fgets(line, sizeof(line), f) != NULL);
		fclose(f);
		if (strstr(line, ") Z ") != NULL)
			break;
		usleep(1000); /* polling for the outcome */
	}
	faucet_proc_watchdog_stop(w); /* no SIGPIPE */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* Stopping the watchdog after the command was reaped kills nothing. */
static void test_watchdog_stop(void **state)
{
	faucet_proc_options o = FAUCET_PROC_OPTIONS_INIT;
	faucet_proc_watchdog *w = NULL;
	char *argv[] = {"sh", "-c", "exit 0", NULL};
	int exec_errno = 0, status;
	pid_t pid = 0;

	(void)state;
	o.path = "/bin/sh";
	o.argv = argv;
	assert_int_equal(faucet_proc_spawn(&o, &pid, &exec_errno), 0);
	assert_int_equal(faucet_proc_watchdog_start(pid, &w), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	faucet_proc_watchdog_stop(w);
	faucet_proc_watchdog_stop(NULL);
	assert_int_equal(faucet_proc_watchdog_start(0, &w), FAUCET_EINVALID);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* the watchdog was reaped too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_spawn_env_and_group),
		cmocka_unit_test(test_spawn_signals),
		cmocka_unit_test(test_spawn_low_descriptors),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_watchdog_stop),
		cmocka_unit_test(test_spawn_watched),
		cmocka_unit_test(test_watchdog_stop_after_it_died),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
