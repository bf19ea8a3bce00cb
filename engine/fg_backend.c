
/*
 * fairgate: the table of backends, by name.
 */


#include <string.h>

#include "fg_backend.h"


/*
 * The cpu backend (engine/fg_backend_cpu.c) is linked in when it is built;
 * until then the reference stays weak and resolves to nothing, so the
 * engine runs with the sim backend and says plainly that cpu is missing.
 */
#pragma weak fg_backend_cpu


const fg_backend_ops_t *
fg_backend_find(const char *name)
{
    const fg_backend_ops_t  *cpu;

    if (strcmp(name, "sim") == 0) {
        return &fg_backend_sim;
    }

    if (strcmp(name, "cpu") == 0) {
        cpu = &fg_backend_cpu;
        return cpu;
    }

    /* "cuda": its own issue; dlopen()ed when it lands (BUILD-NOTES) */
    return NULL;
}
