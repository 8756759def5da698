/* case_memory.c — the case memory estimate and budget (see case_memory.h).
 *
 * The budget is process-wide state: the commands set it once from their options before
 * any case is built, and the sweep's workers inherit it when they fork. */
#include "gen/case_memory.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/registry.h"

#define MEM_MAX ((uint64_t)1 << 62)

static uint64_t budget_set;
static int workers = 1;

/* Rounds a byte count up to a whole byte (exact below 2^53), saturating at 2^63. */
static uint64_t to_bytes(double x) { return x >= 0x1p63 ? (uint64_t)1 << 63 : (uint64_t)ceil(x); }

int ug_case_memory_estimate(const ug_op_def *def, const ug_params *p, ug_dtype dt, ug_case_memory *m, char *err,
                            size_t errlen)
{
    /* Products and sums in double: exact below 2^53, and no size_t overflow above it. */
    double tensors = 0, values = 0, out_elems = 0;
    memset(m, 0, sizeof *m);
    for (const ug_tensor_decl *td = def->decl.tensors; td && td->name; td++) {
        ug_dtype tdt;
        int ndim;
        int64_t shape[8];
        int rc = ug_decl_tensor_shape(p, td, dt, &tdt, &ndim, shape, err, errlen);
        if (rc == 1) continue;
        if (rc) return -2;
        double n = 1;
        for (int i = 0; i < ndim; i++) n *= (double)shape[i];
        tensors += n * ug_dtype_size(tdt) + (double)ug_guard_overhead(); /* its guarded buffer (core/guard.h) */
        if (td->role == UG_TENSOR_OUTPUT) {
            out_elems += n;
        } else {
            values += 8 * n;
        }
    }
    double scratch = (double)UG_CASE_MEMORY_BASE + (def->scratch ? def->scratch(p) : 0);
    m->tensors = to_bytes(tensors);
    m->values = to_bytes(values);
    m->scratch = to_bytes(scratch);
    m->total = to_bytes(tensors + values + scratch);
    m->full_check = to_bytes(UG_CASE_MEMORY_FULL_CHECK * out_elems);
    return 0;
}

int ug_case_memory_check(const ug_op_def *def, const ug_params *p, ug_dtype dt, char *err, size_t errlen)
{
    ug_case_memory m;
    if (ug_case_memory_estimate(def, p, dt, &m, err, errlen)) return -2;
    uint64_t budget = ug_case_memory_budget();
    if (m.total <= budget) return 0;
    const double mib = 1024.0 * 1024.0;
    snprintf(err, errlen,
             "%s: this case needs %llu bytes of memory (%.0f MiB: tensors %.0f, fp64 input copies %.0f, scratch %.0f), "
             "over the case memory budget of %llu bytes (%.0f MiB); raise it with --case-memory BYTES (suffix K, M, "
             "G or T) or $%s",
             def->decl.op, (unsigned long long)m.total, (double)m.total / mib, (double)m.tensors / mib,
             (double)m.values / mib, (double)m.scratch / mib, (unsigned long long)budget, (double)budget / mib,
             UG_CASE_MEMORY_ENV);
    return -2;
}

int ug_case_memory_full_check_fits(const ug_case_memory *m)
{
    return m->full_check <= ug_case_memory_budget() && m->total <= ug_case_memory_budget() - m->full_check;
}

int ug_case_memory_parse(const char *s, uint64_t *bytes)
{
    if (!s || !isdigit((unsigned char)*s)) return -1;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    const char *units = "KMGT", *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    int shift = u ? 10 * (int)(u - units + 1) : 0;
    if (shift) {
        end++;
        if (*end == 'i' || *end == 'I') {
            end++;
            if (toupper((unsigned char)*end) != 'B') return -1;
        }
    }
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end || v == 0 || v > (MEM_MAX >> shift)) return -1;
    *bytes = (uint64_t)v << shift;
    return 0;
}

uint64_t ug_case_memory_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)8 << 30;
    return phys / 2 / (uint64_t)(workers > 0 ? workers : 1);
}

uint64_t ug_case_memory_budget(void)
{
    if (budget_set) return budget_set;
    uint64_t b;
    if (ug_case_memory_parse(getenv(UG_CASE_MEMORY_ENV), &b) == 0) return b;
    return ug_case_memory_default();
}

void ug_case_memory_set_budget(uint64_t bytes) { budget_set = bytes; }

void ug_case_memory_set_workers(int n) { workers = n > 0 ? n : 1; }

int ug_case_memory_configure(const char *opt, char *err, size_t errlen)
{
    const char *env = getenv(UG_CASE_MEMORY_ENV);
    const char *v = opt ? opt : env && *env ? env : NULL;
    if (!v) return 0;
    uint64_t b;
    if (ug_case_memory_parse(v, &b)) {
        snprintf(err, errlen,
                 "%s takes a byte count with an optional suffix K, M, G or T (powers of 1024), such as "
                 "512M or 24G, not \"%s\"",
                 opt ? "--case-memory" : "$" UG_CASE_MEMORY_ENV, v);
        return -2;
    }
    ug_case_memory_set_budget(b);
    return 0;
}
