/*
 * faucet/export.h - what libfaucet exports, and the compiler extensions its
 * headers use, each behind a guard.
 *
 * The shared library is built with -fvisibility=hidden: only a declaration
 * marked FAUCET_EXTERN is part of its ABI, so an internal helper can change
 * without a new soname.  Every function a header under include/faucet/
 * declares carries the mark; nothing else does.
 *
 * libfaucet is a Linux library: it relies on Linux system calls (renameat2,
 * getrandom, pidfd) and on Linux's rename/fsync durability semantics, and
 * it is built and tested only there.  The headers themselves are plain C11
 * (and C++-safe), with the extensions below falling back to nothing on a
 * compiler that lacks them.
 */
#ifndef FAUCET_EXPORT_H
#define FAUCET_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define FAUCET_EXTERN __attribute__((visibility("default")))
/* printf-style argument checking of a function's format string. */
#define FAUCET_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define FAUCET_EXTERN
#define FAUCET_PRINTF(fmt_index, first_arg)
#endif

#endif
