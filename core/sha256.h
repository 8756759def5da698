/* sha256.h — SHA-256 of bytes or of a file, as lowercase hex (sha256.c says why). */
#ifndef UG_SHA256_H
#define UG_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t fill;
} ug_sha256;

void ug_sha256_init(ug_sha256 *s);
void ug_sha256_update(ug_sha256 *s, const void *data, size_t n);
/* Finishes s and writes the 64 hex digits and a NUL. */
void ug_sha256_hex(ug_sha256 *s, char out[65]);
/* The digest of a file's bytes; -1 when it cannot be read. */
int ug_sha256_file(const char *path, char out[65]);

#endif
