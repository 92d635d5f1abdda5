/*
 * mhd.c - opening libmicrohttpd on first use (see mhd.h).
 */
#include <dlfcn.h>
#include <stddef.h>

#include "mhd.h"
#include "serve.h"

serve_mhd_table serve_mhd;

/* Debian 12's soname first; the unversioned name is the -dev package's. */
static const char *const sonames[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};

int serve_mhd_load(void)
{
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
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
	static serve_mhd_table loaded;
	static int done;
	void *h = NULL;

	if (done)
		return 0;
	for (size_t i = 0; h == NULL && i < sizeof(sonames) / sizeof(sonames[0]); i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return cli_error(CLI_EXIT_FAILED, "serve: cannot load libmicrohttpd (%s): install "
				 "Debian's libmicrohttpd12", dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(h, syms[i].name);

		if (f == NULL) {
			(void)dlclose(h);
			return cli_error(CLI_EXIT_FAILED, "serve: libmicrohttpd lacks %s",
					 syms[i].name);
		}
		/* POSIX: a function pointer may be stored through dlsym's void *. */
		*(void **)((char *)&loaded + syms[i].offset) = f;
	}
	serve_mhd = loaded;
	done = 1;
	return 0;
}
