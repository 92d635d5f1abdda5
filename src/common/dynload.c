/*
 * dynload.c - dlopen() a backend's client library and resolve its functions
 * (see dynload.h for why).
 *
 * RTLD_NOW: every symbol the library needs is bound while we can still
 * report a clear error, never later in the middle of a store call.
 * RTLD_LOCAL: the library's symbols do not join the program's global scope,
 * so they cannot interpose on anything else; we look each one up through
 * the handle, which also means our own stubs of the same names are never
 * found instead.
 */
#include <dlfcn.h>
#include <string.h>

#include "internal.h"
#include "dynload.h"

static int load(const faucet_dynlib *lib)
{
	void *handle, *addr[64];

	if (lib->nsyms > FAUCET_ARRAY_LEN(addr))
		return faucet_error_set(FAUCET_EUNSUPPORTED, "%s: too many functions to load",
					lib->soname);
	handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		const char *why = dlerror();
		return faucet_error_set(FAUCET_EUNSUPPORTED,
					"%s needs %s, which cannot be loaded (%s); install it "
					"(Debian/Ubuntu: apt-get install %s)",
					lib->what, lib->soname, why ? why : "not found", lib->package);
	}
	/* Resolve everything before writing any slot, so a failure leaves the
	 * table as it was. */
	for (size_t i = 0; i < lib->nsyms; i++) {
		(void)dlerror();
		addr[i] = dlsym(handle, lib->syms[i].name);
		if (addr[i] == NULL) {
			(void)dlclose(handle);
			return faucet_error_set(FAUCET_EUNSUPPORTED,
						"%s needs %s() from %s, which this copy of %s lacks "
						"(too old?); install a current one (Debian/Ubuntu: "
						"apt-get install %s)",
						lib->what, lib->syms[i].name, lib->soname, lib->soname,
						lib->package);
		}
	}
	/* POSIX guarantees a function's address survives the trip through
	 * void *; memcpy is how it says to store it in a function pointer. */
	for (size_t i = 0; i < lib->nsyms; i++)
		memcpy(lib->syms[i].slot, &addr[i], sizeof(addr[i]));
	return 0;
}

int faucet__dynlib_ensure(faucet_dynlib *lib)
{
	int rc = 0;

	if (atomic_load_explicit(&lib->loaded, memory_order_acquire))
		return 0;
	(void)pthread_mutex_lock(&lib->lock);
	if (!atomic_load_explicit(&lib->loaded, memory_order_relaxed)) {
		rc = load(lib);
		/* Release: whoever sees `loaded` set sees every slot filled. */
		if (rc == 0)
			atomic_store_explicit(&lib->loaded, 1, memory_order_release);
	}
	(void)pthread_mutex_unlock(&lib->lock);
	return rc;
}
