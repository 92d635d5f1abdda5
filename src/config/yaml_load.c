/*
 * yaml_load.c - libyaml, loaded when the first pipeline YAML is read (see
 * src/common/dynload.h for why and how; src/stores/sqlite_load.c is the
 * same pattern): a program that never reads a config never maps it.
 *
 * config.c calls faucet__yaml_load first, so a missing library is an
 * error naming the package before any parser exists; the stubs' failure
 * values are never seen.
 */
#include <stddef.h>
#include <yaml.h>

#include "internal.h"
#include "dynload.h"
#include "config/config_internal.h"

#define YAML_FUNCTIONS(FN, VOID_FN)                                                           \
	FN(int, yaml_parser_initialize, (yaml_parser_t * parser), (parser), 0)                \
	VOID_FN(yaml_parser_set_input_string,                                                 \
		(yaml_parser_t * parser, const unsigned char *input, size_t size),            \
		(parser, input, size))                                                        \
	FN(int, yaml_parser_load, (yaml_parser_t * parser, yaml_document_t * document),       \
	   (parser, document), 0)                                                             \
	VOID_FN(yaml_parser_delete, (yaml_parser_t * parser), (parser))                       \
	FN(yaml_node_t *, yaml_document_get_root_node, (yaml_document_t * document),          \
	   (document), NULL)                                                                  \
	FN(yaml_node_t *, yaml_document_get_node, (yaml_document_t * document, int index),    \
	   (document, index), NULL)                                                           \
	VOID_FN(yaml_document_delete, (yaml_document_t * document), (document))

#define DYN_TABLE ya
#define DYN_LIB libyaml
static struct {
	YAML_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
} ya;

static const faucet_dynsym ya_syms[] = {YAML_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)};

static faucet_dynlib libyaml =
	FAUCET_DYNLIB_INIT("reading a pipeline YAML", "libyaml-0.so.2", "libyaml-0-2", ya_syms);

int faucet__yaml_load(void)
{
	return faucet__dynlib_ensure(&libyaml);
}

YAML_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)
