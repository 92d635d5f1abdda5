/*
 * yaml_load.c - opening libyaml on first use (see yaml_load.h).
 */
#include <stddef.h>

#include "dl.h"
#include "yaml_load.h"

cli_yaml_table cli_yaml;

/* Debian's soname first; the unversioned name is the -dev package's. */
static const char *const sonames[] = {"libyaml-0.so.2", "libyaml.so"};

int cli_yaml_load(void)
{
	static const cli_dl_sym syms[] = {
#define SYM(n) {"yaml_" #n, offsetof(cli_yaml_table, n)}
		SYM(parser_initialize),
		SYM(parser_set_input_string),
		SYM(parser_load),
		SYM(parser_delete),
		SYM(document_get_root_node),
		SYM(document_get_node),
		SYM(document_delete),
#undef SYM
	};
	static int done;

	return cli_dl_load("libyaml (for --config files)", "libyaml-0-2", sonames,
			   sizeof(sonames) / sizeof(sonames[0]), syms, sizeof(syms) / sizeof(syms[0]),
			   &cli_yaml, sizeof(cli_yaml), &done);
}
