/*
 * powerloss.h - a power-loss simulator behind the system-call seam (tests).
 *
 * The simulator is a faucet_sys table (src/common/sys.h) whose calls do the
 * real work on disk and, beside it, keep a model of what a page cache would
 * hold: every change to a file's data or to a directory's entries is
 * volatile until the matching sync - fsync(file) makes that file's data
 * durable, fsync(directory) that directory's entries (creates, renames,
 * links, unlinks, mkdirs).  Each call is appended to a log.
 *
 * A crash point c means "the machine lost power after the first c logged
 * calls".  For it the simulator builds post-crash images of the sandbox
 * directory, in the spirit of SQLite's crash VFS (src/test6.c) and the ALICE
 * study of crash states:
 *   - every operation not yet synced at c is lost;
 *   - every prefix, in issue order, of those unsynced operations is applied
 *     (a journalling file system persists metadata in order);
 *   - the same, with the last applied operation a write cut in half (a torn
 *     tail of unsynced data).
 * An image is materialised as real files in a fresh directory, where the
 * test reopens the store and checks what must have survived.
 *
 * Scope: only paths below the sandbox given to pl_start() are modelled;
 * descriptors of anything else pass through untracked.  Reads are not
 * routed through the seam and need no model.  One simulator at a time.
 */
#ifndef FAUCET_TEST_POWERLOSS_H
#define FAUCET_TEST_POWERLOSS_H

#include <stddef.h>

/* Start recording: snapshot the tree under `sandbox` (absolute path; taken
 * as durable as it is) and install the recording table in the seam.
 * Returns 0, or -1 with a message on stderr. */
int pl_start(const char *sandbox);

/* Stop recording, restore the real calls, forget the model and log. */
void pl_stop(void);

/* Pause / resume recording (the calls still go to the real table).  Used
 * while a test checks an image, so its own writes are not logged. */
void pl_pause(int paused);

/* With refuse != 0, opening an unnamed file (O_TMPFILE) fails with
 * EOPNOTSUPP, as on a filesystem without it. */
void pl_refuse_tmpfile(int refuse);

/* Number of calls logged so far: the crash points are 0 ..= pl_calls(). */
size_t pl_calls(void);

/* The name of logged call i ("openat", "write", "fsync", ...), for messages. */
const char *pl_call_name(size_t i);

/* How many images crash point c has: 1 + the number of operations unsynced
 * at c + the number of those that are writes (torn variants). */
size_t pl_image_count(size_t c);

/* Materialise image `which` (0 .. pl_image_count(c) - 1) of crash point c
 * into directory `out` (created; must not exist): the sandbox's post-crash
 * content.  Returns 0, or -1 with a message on stderr. */
int pl_image_write(size_t c, size_t which, const char *out);

/* A short description of image `which` of crash point c into buf. */
void pl_image_describe(size_t c, size_t which, char *buf, size_t cap);

#endif
