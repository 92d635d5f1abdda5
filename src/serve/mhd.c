/*
 * mhd.c - opening libmicrohttpd on first use (see mhd.h).
 */
#include <stddef.h>

#include "../cli/dl.h"
#include "serve.h"
#include "mhd.h"

serve_mhd_table serve_mhd;

/* Debian 12's soname first; the unversioned name is the -dev package's. */
static const char *const sonames[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};

int serve_mhd_load(void)
{
	static const cli_dl_sym syms[] = {
#define SYM(n) {"MHD_" #n, offsetof(serve_mhd_table, n)}
		SYM(start_daemon),
		SYM(stop_daemon),
		SYM(quiesce_daemon),
		SYM(get_daemon_info),
		SYM(is_feature_supported),
		SYM(lookup_connection_value),
		SYM(queue_response),
		SYM(suspend_connection),
		SYM(resume_connection),
		SYM(create_response_from_buffer),
		SYM(create_response_from_callback),
		SYM(add_response_header),
		SYM(destroy_response),
#undef SYM
	};
	static int done;

	if (cli_dl_load("libmicrohttpd", "libmicrohttpd12", sonames,
			     sizeof(sonames) / sizeof(sonames[0]), syms, sizeof(syms) / sizeof(syms[0]),
			     &serve_mhd, sizeof(serve_mhd), &done) != 0)
		return cli_fail(CLI_EXIT_FAILED, "serve");
	return 0;
}
