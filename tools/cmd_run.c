/* tools/cmd_run.c: PLACEHOLDER until the runtime work lands. */
#include "tools/driver.h"
int cmd_run(int argc, char **argv) { (void)argc; (void)argv; drv_error("'run' is not built yet"); return EXIT_INTERNAL; }
