/* cert_block.h — the engine's CERT emit over a block of elements and dot products of many
 * columns at once, in loops the compiler vectorises (cert_block.c says why). */
#ifndef UG_CERT_BLOCK_H
#define UG_CERT_BLOCK_H
#include <stddef.h>

#include <stdint.h>

#include "oracles/mp/arith_num.h"
#include "oracles/mp/cert_inline.h"

/* ug_cv_put (cert_inline.h) of elements k0 .. k0+n-1 of CERT sink s, element i with value
 * v[i] and bound e[i]: the same values, flags and decisions; returns how many are unsure. */
unsigned long ug_cv_put_block(const ug_ar_sink *s, size_t k0, const double *v, const double *e, size_t n);

/* Running sums of ncols column dot products (ug_cv_dot_*_cols), ncols entries each. */
typedef struct {
    double *s, *abs_sum, *e;
    int64_t *exact;
} ug_cv_cols;

/* The running sums and the results of a column form below over up to ncols columns, in one
 * allocation (ug_cv_cols_open: 0, or -1 out of memory; ug_cv_cols_close frees it, opened or
 * not). */
typedef struct {
    ug_cv_cols acc;
    ug_cv *out;
} ug_cv_cols_work;
int ug_cv_cols_open(ug_cv_cols_work *w, size_t ncols);
void ug_cv_cols_close(ug_cv_cols_work *w);

/* out[c] = ug_cv_dot_d(x, sx, B + c, ldb, n, 0) for the ncols columns of B (row i at
 * B + i*ldb), in one pass over B's rows: each column gets ug_cv_dot_d's operations in its
 * order, so the same value and bound, but B is read contiguously (and the columns
 * vectorise). */
void ug_cv_dot_d_cols(const double *x, size_t sx, const double *B, size_t ldb, size_t n, size_t ncols, ug_cv_cols *a,
                      ug_cv *out);
/* out[c] = ug_dot_nd(ar, x, B + c, ldb, n) in CERT (cert_inline.h's ug_cv_dot_nd_step and
 * _end) for the ncols columns of B, in one pass over B's rows. */
void ug_cv_dot_nd_cols(const ug_num *x, const double *B, size_t ldb, size_t n, size_t ncols, ug_cv_cols *a, ug_cv *out);

#endif
