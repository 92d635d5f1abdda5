/*
 * config_internal.h - the config module's private parts (not installed).
 */
#ifndef FAUCET_CONFIG_INTERNAL_H
#define FAUCET_CONFIG_INTERNAL_H

/* Open libyaml once (yaml_load.c): 0, or FAUCET_EUNSUPPORTED naming the
 * package to install.  Thread-safe. */
int faucet__yaml_load(void);

#endif
