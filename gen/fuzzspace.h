/* fuzzspace.h — the structure-aware decoder of the precision fuzzer: any byte string maps
 * to a valid case spec inside an operator's generalization space (gen/ops/<op>.json).
 *
 * Byte layout (a reader that runs out of bytes reads zeros, so every input decodes):
 *   dtype       1 byte: index into the grid's dtype list
 *   dist        1 byte: < 192 a named dist set of the space; else a generated one, then per
 *               random input 2 bytes: kind (uniform, normal, wide, outliers, const) and its
 *               parameter (spans 2^-8 .. 2^15; wide exponents up to 2^17)
 *   params      per grid param axis 1 byte: < 160 a listed value; else, for an all-integer
 *               axis, 2 more bytes: an integer between the list's min and max
 *   inject      1 byte: count (0..3), then per injection 1 byte: input (bits 1..7) and
 *               whether the whole input takes the value (bit 0), else 2 bytes index;
 *               1 byte value (zero, -zero, max, -max, subnormal, -subnormal, inf, -inf, nan)
 *   seed        4 bytes
 * With generated draws, an input whose generated draw its domain refuses keeps the space's
 * first (plain) set's draw. An input the space's "fuzz_domain" names keeps its set's
 * distribution (unless the entry says "generated": true), and an injection into it of a
 * value not in its "specials" list (for a whole input, not in its "whole" list where it
 * has one) is dropped: the op's contract declares those inputs outside its device model, so
 * the fuzzer does not search there.
 * ug_fuzz_encode() writes bytes that decode to a given spec's shape, dtype and dist set:
 * the seed corpus is the plan's cases. */
#ifndef UG_FUZZSPACE_H
#define UG_FUZZSPACE_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct {
    int op;
    cJSON *space; /* owned: the op's gen/ops/<op>.json */
} ug_fuzz_space;

/* Loads the space of op from the data dir ($ULPGYM_DATA or the source tree). */
int ug_fuzz_space_load(int op, ug_fuzz_space *s, char *err, size_t errlen);
void ug_fuzz_space_free(ug_fuzz_space *s);
/* Decodes bytes into a canonical spec (malloc'd; NULL only when memory runs out). */
char *ug_fuzz_decode(const ug_fuzz_space *s, const uint8_t *data, size_t size);
/* The space's fuzz_domain as the contract shows it: [{"input" ("*": every other input),
 * "excluded_specials": [...], "excluded_whole": [specials allowed in one element but not in
 * every element], "generated_draws": bool, "why"}], [] when it has none; NULL when the
 * space cannot be read. */
cJSON *ug_fuzz_domain_json(int op);
/* Encodes spec's dtype, dist set and params; returns bytes written (<= cap). */
size_t ug_fuzz_encode(const ug_fuzz_space *s, const char *spec, uint8_t *out, size_t cap);

#endif
