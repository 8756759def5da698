/* case_memory.h — the memory a case needs, estimated from its declaration before any
 * tensor is allocated, and the budget it must fit.
 *
 * Cases are refused by what they cost, not by element counts: a case whose estimate
 * exceeds the budget is refused (-2, the message gives the bytes needed, the budget and
 * how to raise it); every other case is built, however large its shape. The estimate is
 *     tensors   every declared tensor present: dtype size x elements (+ the canaries and
 *               page rounding of its guarded buffer, ug_guard_overhead: core/guard.h)
 *   + values    the fp64 copy the case keeps of each input (8 B per input element)
 *   + scratch   UG_CASE_MEMORY_BASE (small per-row buffers, the sample, the MPFR pool, the
 *               16 MiB of freed tensor buffers core/guard.c keeps for reuse) and
 *               the op's own term (ug_op_def.scratch): what its sim kernel, builder and
 *               oracle allocate that grows with the case (fp32 copies of staged tensors,
 *               permutations, one row's keys in fp64); an op without one declares nothing
 * and, apart, what judging every output element costs (the re-check near a tolerance):
 * UG_CASE_MEMORY_FULL_CHECK bytes per output element. A plugin kernel that allocates more
 * than the sim kernel needs a larger budget.
 *
 * The budget is --case-memory BYTES on the commands that build cases, else
 * $ULPGYM_CASE_MEMORY, else half the physical memory divided by the sweep's workers (each
 * worker holds one case at a time; a single-case command counts one). */
#ifndef UG_GEN_CASE_MEMORY_H
#define UG_GEN_CASE_MEMORY_H
#include <stddef.h>
#include <stdint.h>

#include "core/ops.h"

#define UG_CASE_MEMORY_BASE ((uint64_t)64 << 20)
#define UG_CASE_MEMORY_FULL_CHECK 96 /* bytes per output element judged on every element */
#define UG_CASE_MEMORY_ENV "ULPGYM_CASE_MEMORY"

typedef struct {
    uint64_t tensors, values, scratch;
    uint64_t total;      /* tensors + values + scratch: what the budget is compared with */
    uint64_t full_check; /* extra bytes to judge every output element */
} ug_case_memory;

/* Estimates the memory of a case of op def with parsed params p and case dtype dt. Sums
 * are formed in double and saturate at 2^63 (exact below 2^53 bytes). 0, or -2 when a
 * tensor's shape does not evaluate (message names op and tensor). */
int ug_case_memory_estimate(const ug_op_def *def, const ug_params *p, ug_dtype dt, ug_case_memory *m, char *err,
                            size_t errlen);
/* Estimates and compares with the budget: 0 when the case fits, -2 with a message naming
 * op, the bytes needed, the budget and how to raise it. */
int ug_case_memory_check(const ug_op_def *def, const ug_params *p, ug_dtype dt, char *err, size_t errlen);
/* Whether judging every output element of a case with estimate m stays within the budget. */
int ug_case_memory_full_check_fits(const ug_case_memory *m);

/* Parses a byte count: digits with an optional suffix K, M, G or T (powers of 1024, case
 * ignored, an optional trailing "B" or "iB": "512M", "24GiB"). 0 ok, -1 junk, zero or
 * over 2^62. */
int ug_case_memory_parse(const char *s, uint64_t *bytes);
/* The budget in force: the one set, else $ULPGYM_CASE_MEMORY (when it parses), else the
 * default. */
uint64_t ug_case_memory_budget(void);
/* Half the physical memory divided by the workers set (at least 1); 4 GiB when the
 * physical memory is unknown. */
uint64_t ug_case_memory_default(void);
/* Sets the budget (0: back to $ULPGYM_CASE_MEMORY or the default). */
void ug_case_memory_set_budget(uint64_t bytes);
/* Sets the number of workers sharing the machine (a sweep's -j); the default budget is
 * divided by it. */
void ug_case_memory_set_workers(int n);
/* Applies a --case-memory value (NULL: none given) or else $ULPGYM_CASE_MEMORY: the one
 * place commands take the budget from. 0, or -2 with a message when either does not
 * parse. */
int ug_case_memory_configure(const char *opt, char *err, size_t errlen);

#endif
