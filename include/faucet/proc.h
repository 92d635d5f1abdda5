/*
 * faucet/proc.h - starting a command the way faucet does (doc/design.md §12).
 *
 * One process supervisor for `faucet run`, backfill units and embedders:
 * no shell (the executable is resolved on PATH once, before anything runs),
 * the command in a process group of its own, the caller's signal handlers
 * never run in the child, a failed execve reported with its errno rather
 * than as exit status 127, optionally the command's death with its parent
 * (even a parent killed outright) and a watchdog that kills the command's
 * whole group when the caller goes.
 *
 * Everything here is safe to call from a program with many threads: the
 * child runs only async-signal-safe calls between fork and execve.
 */
#ifndef FAUCET_PROC_H
#define FAUCET_PROC_H

#include <sys/types.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAUCET_PROC_OPTIONS_VERSION 1

/* faucet_proc_options.flags */
enum {
	/* The child gets SIGKILL when the thread that started it ends (Linux's
	 * PR_SET_PDEATHSIG: in a threaded caller, start it from a thread that
	 * lives as long as the command); a caller already gone by the time the
	 * child runs makes it exit 127. */
	FAUCET_PROC_DIE_WITH_PARENT = 1u << 0
};

/* How to start a command.  Initialise with FAUCET_PROC_OPTIONS_INIT (or
 * faucet_proc_options_init) and set what differs. */
typedef struct {
	unsigned int version; /* FAUCET_PROC_OPTIONS_VERSION */
	const char *path;     /* the executable to run (see faucet_proc_find) */
	char *const *argv;    /* NULL-terminated; argv[0] is the command's name */
	char *const *envp;    /* NULL-terminated environment; NULL = the caller's */
	int fd[3];            /* the child's stdin, stdout and stderr; -1 = inherited */
	unsigned int flags;   /* FAUCET_PROC_* */
} faucet_proc_options;

#define FAUCET_PROC_OPTIONS_INIT {FAUCET_PROC_OPTIONS_VERSION, NULL, NULL, NULL, {-1, -1, -1}, 0}

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_proc_options_init(faucet_proc_options *o, unsigned int version);

/* Where `name` is, as execvp would find it: a name with a '/' is taken as
 * a path, any other is looked up on $PATH (an empty entry is the current
 * directory).  0 and *out (caller frees) for a regular executable file;
 * FAUCET_ENOTFOUND with a message saying which when there is none. */
FAUCET_EXTERN int faucet_proc_find(const char *name, char **out);

/* The caller's environment minus every variable named in `drop` and every
 * variable that `set` ("NAME=VALUE" strings) sets, plus `set`; both lists
 * NULL-terminated (NULL = empty).  *out is one allocation (free() it); it
 * points into environ, so build it right before use. */
FAUCET_EXTERN int faucet_proc_env(const char *const *drop, const char *const *set, char ***out);

/* Start the command: its own process group (its pid), the signals faucet
 * catches or ignores (INT, TERM, HUP, CHLD, PIPE) back at their defaults,
 * the caller's signal mask minus INT, TERM and HUP.  Returns 0 with *pid
 * once the command runs; 0 with *pid = 0 and *exec_errno set when execve
 * failed (the child is reaped; the last error says "cannot run 'PATH': why");
 * an error code when no process could be started (out of descriptors or
 * processes). */
FAUCET_EXTERN int faucet_proc_spawn(const faucet_proc_options *o, pid_t *pid, int *exec_errno);

/* A process of the caller's, outside the command's group, that kills that
 * whole group (SIGKILL) when the caller dies - killed outright included -
 * so the command's own children do not outlive it. */
typedef struct faucet_proc_watchdog faucet_proc_watchdog;

/* Watch process group `group`.  0 and *out, or an error (the command then
 * runs unwatched; FAUCET_PROC_DIE_WITH_PARENT still ends the command). */
FAUCET_EXTERN int faucet_proc_watchdog_start(pid_t group, faucet_proc_watchdog **out);

/* faucet_proc_spawn with a watchdog of the command's group in place before
 * the command runs (the child waits for it), so that no moment exists in
 * which the caller dying leaves the command's children behind.  *watchdog
 * is for faucet_proc_watchdog_stop once the command is reaped; NULL when
 * the command could not run, or (the command then runs unwatched, as a
 * failed faucet_proc_watchdog_start says) no watchdog could be started. */
FAUCET_EXTERN int faucet_proc_spawn_watched(const faucet_proc_options *o, pid_t *pid,
					    int *exec_errno, faucet_proc_watchdog **watchdog);

/* The group's leader has been reaped: the watchdog leaves without killing
 * (the group id may be reused) and `w` is freed.  NULL is a no-op. */
FAUCET_EXTERN void faucet_proc_watchdog_stop(faucet_proc_watchdog *w);

/* A wait status as a shell reports it: the exit status, or 128 + the
 * signal that ended the process. */
FAUCET_EXTERN int faucet_proc_exit_code(int wait_status);

#ifdef __cplusplus
}
#endif

#endif
