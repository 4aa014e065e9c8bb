/* tools/cmd_quantize.c: PLACEHOLDER until the runtime work lands. */
#include "tools/driver.h"
int cmd_quantize(int argc, char **argv) { (void)argc; (void)argv; drv_error("'quantize' is not built yet"); return EXIT_INTERNAL; }
