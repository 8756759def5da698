/* input_cache.h — drawn inputs kept on disk, so that a case's inputs are drawn once.
 *
 * A case's inputs are fixed by its spec, and the nightly plan is the same every night, yet
 * drawing them (Philox, Box-Muller) was about a tenth of a sweep's CPU. A tensor that
 * ug_dist_fill drew is a pure function of (distribution, seed, tensor index, dtype, element
 * count) and of the drawing code, so the cache keys each drawn tensor by exactly that: the
 * canonical text of those five, UG_DIST_VERSION and a fingerprint of what the drawing code
 * gives on a fixed probe (any change of drawing that reaches the probe misses every entry
 * even where no one bumped the version). A file holds its full key and a checksum of its
 * bytes; one whose key or checksum does not match is drawn afresh and replaced, so a
 * damaged or foreign file never changes an input. Only tensors of UG_INPUT_CACHE_MIN_BYTES
 * or more are kept (smaller ones draw faster than a file opens).
 *
 * The folder is $ULPGYM_INPUT_CACHE ("off" turns the cache off), else
 * $XDG_CACHE_HOME/ulpgym/inputs or ~/.cache/ulpgym/inputs; it holds at most
 * $ULPGYM_INPUT_CACHE_MAX bytes (K, M, G, T suffixes; default 4G). Every process that uses
 * the folder (a sweep's workers, shards started together) adds a file only after adding its
 * bytes to the folder's size file under flock, so together they never take it past the cap;
 * an open that finds it over 90 % full deletes the least recently used files down to 75 %
 * (room for a changed plan's tensors), and once a day an open counts the files again.
 * Deleting the folder is always safe. Files are created in the folder by name (openat, O_EXCL | O_NOFOLLOW, then renamed
 * into place): a link in it is never written through or read. */
#ifndef UG_INPUT_CACHE_H
#define UG_INPUT_CACHE_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"

#define UG_INPUT_CACHE_MIN_BYTES ((size_t)64 << 10)
#define UG_INPUT_CACHE_DEFAULT_MAX ((uint64_t)4 << 30)

/* What one process (with its forked workers) did with the cache. */
typedef struct {
    uint64_t read_n, read_bytes;       /* tensors read from the cache */
    uint64_t written_n, written_bytes; /* tensors drawn and then stored */
    uint64_t drawn_n, drawn_bytes;     /* drawn and not stored: small, or over the budget */
    uint64_t damaged_n;                /* files whose key or checksum did not match: drawn afresh */
    uint64_t folder_bytes, max_bytes;  /* the folder's size now (as its size file says), and its cap */
} ug_input_cache_stats;

/* Opens the cache for this process and every worker it forks afterwards: reads the
 * environment, creates the folder and reads its size (counting and pruning where due).
 * Returns 0 with the cache on, 1 when it is off (by
 * $ULPGYM_INPUT_CACHE=off, or no home folder), -1 when the folder cannot be used (err
 * says why; the caller warns and goes on without it). */
int ug_input_cache_open(char *err, size_t errlen);
/* Closes it in this process (its counts go; the files stay): tests open it anew. */
void ug_input_cache_close(void);
/* ug_dist_fill through the cache: the same bits, read back where an earlier process drew
 * them. Without ug_input_cache_open, ug_dist_fill itself. */
int ug_input_cache_fill(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                        size_t errlen);
/* The counts so far, over this process and its workers. */
void ug_input_cache_stats_get(ug_input_cache_stats *s);
/* One line for a summary ("input cache FOLDER: ..."), or "" when the cache is off. */
void ug_input_cache_summary(char *buf, size_t len);

#endif
