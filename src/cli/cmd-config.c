/* robotrain config: placeholder until its module lands (replaced by its owner). */
#include "config.h"

#include <stdio.h>

#include "cli/commands.h"

int rt_cmd_config(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "robotrain config: placeholder\n");
    return RT_EXIT_FAILURE;
}
