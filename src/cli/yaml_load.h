/*
 * yaml_load.h - libyaml, loaded when a --config file is first read (see
 * dl.h): a command without --config never maps it.  Include this instead
 * of <yaml.h>; the yaml_ names below call through the table.
 */
#ifndef FAUCET_CLI_YAML_LOAD_H
#define FAUCET_CLI_YAML_LOAD_H

#include <yaml.h>

typedef struct {
	int (*parser_initialize)(yaml_parser_t *parser);
	void (*parser_set_input_string)(yaml_parser_t *parser, const unsigned char *input,
					size_t size);
	int (*parser_load)(yaml_parser_t *parser, yaml_document_t *document);
	void (*parser_delete)(yaml_parser_t *parser);
	yaml_node_t *(*document_get_root_node)(yaml_document_t *document);
	yaml_node_t *(*document_get_node)(yaml_document_t *document, int index);
	void (*document_delete)(yaml_document_t *document);
} cli_yaml_table;

extern cli_yaml_table cli_yaml;

/* Open libyaml and fill cli_yaml, once: 0, or FAUCET_EUNSUPPORTED with the
 * library's error set (naming the package). */
int cli_yaml_load(void);

#define yaml_parser_initialize (*cli_yaml.parser_initialize)
#define yaml_parser_set_input_string (*cli_yaml.parser_set_input_string)
#define yaml_parser_load (*cli_yaml.parser_load)
#define yaml_parser_delete (*cli_yaml.parser_delete)
#define yaml_document_get_root_node (*cli_yaml.document_get_root_node)
#define yaml_document_get_node (*cli_yaml.document_get_node)
#define yaml_document_delete (*cli_yaml.document_delete)

#endif
