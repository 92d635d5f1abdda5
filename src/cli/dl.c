/*
 * dl.c - opening one of the command's libraries on first use (see dl.h).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dl.h"

int cli_dl_load(const char *what, const char *package, const char *const *sonames,
		size_t nsonames, const cli_dl_sym *syms, size_t nsyms, void *table, size_t size,
		int *done)
{
	unsigned char *loaded;
	void *h = NULL;

	if (*done)
		return 0;
	for (size_t i = 0; h == NULL && i < nsonames; i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *why = dlerror();

		return faucet_error_set(FAUCET_EUNSUPPORTED, "cannot load %s (%s): install Debian's %s",
					what, why != NULL ? why : "not found", package);
	}
	if ((loaded = calloc(1, size)) == NULL) {
		(void)dlclose(h);
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nsyms; i++) {
		void *f = dlsym(h, syms[i].name);

		if (f == NULL) {
			free(loaded);
			(void)dlclose(h);
			return faucet_error_set(FAUCET_EUNSUPPORTED,
						"%s lacks %s (install a current %s)", what,
						syms[i].name, package);
		}
		/* POSIX: a function pointer may be stored through dlsym's void *. */
		memcpy(loaded + syms[i].offset, &f, sizeof(f));
	}
	memcpy(table, loaded, size);
	free(loaded);
	*done = 1;
	return 0;
}
