/* `scry run --config FILE`: its YAML file read into command-line arguments (run_config.c). */
#ifndef SCRY_RUN_RUN_CONFIG_H
#define SCRY_RUN_RUN_CONFIG_H

#include <stddef.h>

/* The YAML file's options as command-line arguments.
 * The file is a mapping of long option names (dashes or underscores) to values: a scalar for an
 * option with a value, a list of scalars for a repeatable one (repeatable[], NULL-ended),
 * true/false for a flag (false: its --no- twin; an error for a flag without one). */
struct cli_config {
    char *path;
    char **args;    /* "--name=value" or "--name", in the file's order */
    size_t *lines;  /* the line of each argument's key, from 1 */
    size_t nargs, cap;
};
struct option;
/* Reads path into cfg; a missing or unreadable file is an io_error, everything else wrong with
 * it a usage error naming the file, the line and the key. skip names options the file may not
 * hold (NULL-ended). */
int cli_config_load(const char *path, const struct option *opts, const char *const *repeatable,
                    const char *const *skip, struct cli_config *cfg);
/* When the usage error just recorded is about argument i of cfg (0-based), records it again
 * with the file and line in front. */
void cli_config_blame(const struct cli_config *cfg, size_t i);
void cli_config_free(struct cli_config *cfg);

#endif
