/* fuzz_npy.c — libFuzzer target for the .npy reader (core/npy.c): any bytes are either
 * refused with a message or parsed into an array whose data lies inside the buffer and
 * whose size matches its shape; a parsed array written back and read again is the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/npy.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    ug_npy a;
    char err[512] = "";
    if (ug_npy_parse(data, size, &a, err, sizeof err) != 0) {
        if (!err[0]) abort(); /* a refusal must say why */
        return 0;
    }
    const unsigned char *p = a.data;
    if (a.data_len != a.numel * (size_t)a.itemsize || p < data || p + a.data_len > data + size) abort();
    if (a.data_len > (1u << 20)) return 0; /* round trip only small arrays */
    char path[64];
    snprintf(path, sizeof path, "/tmp/ulpgym_fuzz_npy_%d.npy", (int)getpid());
    void *buf = NULL;
    ug_npy b;
    if (ug_npy_write_file(path, a.descr, a.ndim, a.shape, a.data, err, sizeof err) == 0) {
        if (ug_npy_read_file(path, &buf, &b, err, sizeof err) != 0 || b.ndim != a.ndim || b.numel != a.numel ||
            strcmp(b.descr, a.descr) != 0 || memcmp(b.data, a.data, a.data_len) != 0)
            abort(); /* written arrays must read back identically */
        free(buf);
    }
    unlink(path);
    return 0;
}
