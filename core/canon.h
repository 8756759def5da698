/* canon.h — canonical JSON text and the 64-bit hash that names a case.
 *
 * A case ID must be the same on every machine and every build, so it cannot depend on
 * cJSON's own printer (which uses %1.15g/%1.17g and keeps key order). The canonical form
 * is: object keys sorted bytewise, no whitespace, integers with |x| < 2^53 printed as
 * integers, other numbers in the shortest %.*g form that reads back to the same double,
 * strings with only the escapes JSON requires. The hash is FNV-1a 64 followed by the
 * splitmix64 finaliser (FNV alone mixes its last bytes poorly). */
#ifndef UG_CANON_H
#define UG_CANON_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Returns a malloc'd canonical text of item (NULL on allocation failure or a non-finite
 * number, which JSON cannot carry). */
char *ug_json_canonical(const cJSON *item);
uint64_t ug_hash64(const void *data, size_t len);
/* The same hash in pieces, for texts that share a prefix:
 * ug_hash64(d, n) == ug_hash64_finish(ug_hash64_update(UG_HASH64_INIT, d, n)), and
 * updating with a then b equals updating with their concatenation. */
#define UG_HASH64_INIT 0xcbf29ce484222325ULL
uint64_t ug_hash64_update(uint64_t state, const void *data, size_t len);
uint64_t ug_hash64_finish(uint64_t state);
/* A fixed text's whole effect on a hash state, in one step. FNV-1a's xor with a byte
 * changes only the state's low 8 bits, and the low 8 bits of a product depend only on
 * the factors' low 8 bits, so after n bytes of a text t the state is
 *   update(h, t) = h * FNV_PRIME^n + add[h & 255]      (mod 2^64)
 * with add[] a table of 256 entries made once per text (ug_hash64_jump_make). The plan
 * expansion hashes the same fragments (a param value, a spec's fixed ending) on millions
 * of states: one multiply and one load instead of one multiply per byte. */
typedef struct {
    uint64_t mul;      /* FNV_PRIME^n */
    uint64_t add[256]; /* update(r, t) - r * mul, for r = 0..255 */
} ug_hash64_jump;
void ug_hash64_jump_make(ug_hash64_jump *j, const void *data, size_t len);
static inline uint64_t ug_hash64_jump_apply(const ug_hash64_jump *j, uint64_t state)
{
    return state * j->mul + j->add[state & 255];
}
/* ug_hash64_update of several independent states at once: state[l] is updated with
 * len[l] bytes of data[l] (interleaved, so that the lanes' multiplications overlap). */
void ug_hash64_update_lanes(uint64_t *state, size_t lanes, const char *const *data, const size_t *len);
/* A checksum of len bytes at memory speed (four lanes of 8-byte words, multiply-rotate
 * mixing, ug_hash64_finish at the end): to tell a damaged file, not to name anything. */
uint64_t ug_hash64_words(const void *data, size_t len);
/* Shortest "%.*g" text that round-trips x; buf needs 32 bytes. */
void ug_format_double(double x, char *buf);
/* A whole text file (a spec, plan or space JSON), NUL-terminated and malloc'd; NULL with a
 * message naming the path when it cannot be read. Only a regular file of at most
 * UG_TEXT_FILE_MAX bytes is read: a FIFO, a device (/dev/zero) or a folder is refused at
 * once, before any read, and so is a larger file. */
#define UG_TEXT_FILE_MAX ((size_t)256 << 20) /* 256 MiB */
char *ug_text_file_read(const char *path, char *err, size_t errlen);
/* The open behind it: a read-only descriptor of path when it is a regular file of at most
 * max bytes (*size its size; opened O_NONBLOCK, so a FIFO never blocks), else -1 with a
 * message saying what it is. */
int ug_regular_file_open(const char *path, size_t max, size_t *size, char *err, size_t errlen);
/* Reads (writing 0) or writes all n bytes of p on fd, again after EINTR: 0, or -1 on an
 * error or an early end of file (a pipe's other end gone, a file shorter than asked). */
int ug_io_full(int fd, void *p, size_t n, int writing);

#endif
