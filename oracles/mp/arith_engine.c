/* arith_engine.c — the engine under every arithmetic (arith_engine.h): the MPFR number pool,
 * the output sinks and the counters, emitting an element in each arithmetic's rule, and the
 * MPFR arithmetics' primitives (EXACT: exact products and sums, one rounding; MPFR_SEQ: one
 * rounded operation per term). It calls nothing above it: the plain arithmetics' primitives
 * are arith_inline.h's, the out-of-line functions arith_fn.c's, the public dispatch arith.c's. */
#include "oracles/mp/arith_engine.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mp/arith_engine_private.h"
#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/mp/exact_dot.h"

#define POOL_BLOCK 512

ug_ar *ug_ar_new(ug_ar_mode mode, mpfr_prec_t prec, ug_dtype naive_dt)
{
    ug_ar *ar = calloc(1, sizeof *ar);
    if (!ar) return NULL;
    ar->mode = mode;
    ar->prec = prec < 64 ? 64 : prec;
    ar->naive_dt = naive_dt;
    return ar;
}

void ug_ar_free(ug_ar *ar)
{
    if (!ar) return;
    for (size_t i = 0; i < ar->inited; i++) mpfr_clear(ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK]);
    for (size_t i = 0; i < ar->nblocks; i++) free(ar->blocks[i]);
    for (size_t i = 0; i < ar->prods_inited; i++) mpfr_clear(ar->prods[i]);
    free(ar->blocks);
    free(ar->ptrs);
    free(ar->prods);
    free(ar);
}

ug_arx ugx_of(ug_ar *ar) { return UG_AR_ARX(ar); }
mpfr_prec_t ug_ar_get_prec(const ug_ar *ar) { return ar->prec; }
void ug_ar_set_sink(ug_ar *ar, ug_ar_sink *sinks, int n)
{
    ar->sinks = sinks;
    ar->nsinks = n;
}
size_t ug_ar_mark(const ug_ar *ar) { return ar->used; }
void ug_ar_release(ug_ar *ar, size_t mark)
{
    if (mark <= ar->used) ar->used = mark;
}
void ug_ar_counts(const ug_ar *ar, unsigned long *emitted, unsigned long *unsure)
{
    *emitted = ar->emitted;
    *unsure = ar->unsure;
}
int ug_ar_plain(const ug_ar *ar) { return !UG_AR_IS_MP(ar); }

static mpfr_ptr pool_get(ug_ar *ar)
{
    if (ar->used == ar->nblocks * POOL_BLOCK) {
        mpfr_t **nb = realloc(ar->blocks, (ar->nblocks + 1) * sizeof *nb);
        if (!nb) abort(); /* the oracle cannot continue without memory */
        ar->blocks = nb;
        ar->blocks[ar->nblocks] = malloc(POOL_BLOCK * sizeof(mpfr_t));
        if (!ar->blocks[ar->nblocks]) abort();
        ar->nblocks++;
    }
    size_t i = ar->used++;
    if (i == ar->inited) {
        mpfr_init2(ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK], ar->prec);
        ar->inited++;
    }
    return ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK];
}

static void scratch_reserve(ug_ar *ar, size_t n)
{
    if (n <= ar->scratch_cap) return;
    size_t cap = ar->scratch_cap ? ar->scratch_cap : 256;
    while (cap < n) cap *= 2;
    mpfr_ptr *p = realloc(ar->ptrs, cap * sizeof *p);
    mpfr_t *q = p ? realloc(ar->prods, cap * sizeof *q) : NULL;
    if (!p || !q) abort();
    ar->ptrs = p;
    ar->prods = q;
    ar->scratch_cap = cap;
}

static void prods_init(ug_ar *ar, size_t n)
{
    scratch_reserve(ar, n);
    while (ar->prods_inited < n) mpfr_init2(ar->prods[ar->prods_inited++], 128);
}

/* An MPFR pool number as the engine's number: its nearest double alongside. */
static ug_num num_exact(mpfr_ptr m)
{
    ug_num r = {mpfr_get_d(m, MPFR_RNDN), 0.0, m};
    return r;
}

ug_num ug_mp_c(ug_ar *ar, double x)
{
    mpfr_ptr m = pool_get(ar);
    mpfr_set_d(m, x, MPFR_RNDN); /* exact: prec >= 64 > 53 */
    return num_exact(m);
}

ug_num ug_mp_op1(ug_ar *ar, ug_mp_fn1 f, ug_num a)
{
    mpfr_ptr m = pool_get(ar);
    f(m, a.m, MPFR_RNDN); /* rounds: to the working precision */
    return num_exact(m);
}

ug_num ug_mp_op2(ug_ar *ar, ug_mp_fn2 f, ug_num a, ug_num b)
{
    mpfr_ptr m = pool_get(ar);
    f(m, a.m, b.m, MPFR_RNDN); /* rounds: to the working precision */
    return num_exact(m);
}

ug_num ug_mp_round_num(ug_ar *ar, ug_num x, ug_dtype dt)
{
    mpfr_ptr m = pool_get(ar);
    mpfr_set_d(m, ug_mp_round(x.m, dt), MPFR_RNDN); /* exact: a dtype value is a double */
    return num_exact(m);
}

/* UG_AR_MPFR_SEQ reductions: one rounded MPFR operation per term. */
static ug_num seq_sum(ug_ar *ar, const ug_num *xs, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    mpfr_ptr acc = pool_get(ar), t = pool_get(ar);
    mpfr_set_zero(acc, 1);
    for (size_t i = 0; i < n; i++) {
        if (xs)
            mpfr_set(t, xs[i].m, MPFR_RNDN);
        else
            mpfr_set_d(t, a[i * sa], MPFR_RNDN);
        if (b) mpfr_mul_d(t, t, b[i * sb], MPFR_RNDN); /* rounds: working precision */
        mpfr_add(acc, acc, t, MPFR_RNDN);              /* rounds: working precision */
    }
    return num_exact(acc);
}

ug_num ug_mp_sum(ug_ar *ar, const ug_num *xs, size_t n)
{
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, xs, NULL, 0, NULL, 0, n);
    scratch_reserve(ar, n ? n : 1);
    for (size_t i = 0; i < n; i++) ar->ptrs[i] = xs[i].m;
    mpfr_ptr m = pool_get(ar);
    mpfr_sum(m, ar->ptrs, n, MPFR_RNDN); /* exact sum, one rounding */
    return num_exact(m);
}

/* UG_AR_EXACT's dot through MPFR: the exact products summed by mpfr_sum, one rounding into m.
 * ug_exact_dot (exact_dot.h) gives the same bits faster; this path is kept for the inputs it
 * leaves alone (an inf or a NaN), whose special values MPFR's IEEE rules give. */
static void dot_d_mpfr(ug_ar *ar, mpfr_ptr m, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    prods_init(ar, n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(ar->prods[i], a[i * sa], MPFR_RNDN);               /* exact */
        mpfr_mul_d(ar->prods[i], ar->prods[i], b[i * sb], MPFR_RNDN); /* exact: 106 <= 128 bits */
        ar->ptrs[i] = ar->prods[i];
    }
    mpfr_sum(m, ar->ptrs, n, MPFR_RNDN); /* exact sum, one rounding */
}

ug_num ug_mp_dot_d(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, NULL, a, sa, b, sb, n);
    mpfr_ptr m = pool_get(ar);
    if (ug_exact_dot(m, a, sa, b, sb, n) != 0) dot_d_mpfr(ar, m, a, sa, b, sb, n); /* an inf or a NaN */
    return num_exact(m);
}

ug_num ug_mp_dot_nd(ug_ar *ar, const ug_num *x, const double *b, size_t sb, size_t n)
{
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, x, NULL, 0, b, sb, n);
    prods_init(ar, n ? n : 1);
    size_t mark = ug_ar_mark(ar);
    for (size_t i = 0; i < n; i++) {
        mpfr_ptr t = pool_get(ar);
        mpfr_mul_d(t, x[i].m, b[i * sb], MPFR_RNDN); /* rounds: to the working precision */
        ar->ptrs[i] = t;
    }
    mpfr_ptr m = pool_get(ar);
    mpfr_sum(m, ar->ptrs, n, MPFR_RNDN);
    /* keep m, drop the products: move the result into the first released slot */
    ug_ar_release(ar, mark);
    mpfr_ptr r = pool_get(ar);
    if (r != m) mpfr_set(r, m, MPFR_RNDN); /* exact: same precision */
    return num_exact(r);
}

/* ug_mp_dot_d_cols: ug_mp_dot_d's numbers per column, the pool's numbers taken in its
 * order, the columns through ug_exact_dot_cols (16 per pass over B's rows, no strided walks);
 * a column holding an inf or a NaN through the MPFR path, as ug_dot_d takes it. */
void ug_mp_dot_d_cols(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out)
{
    mpfr_ptr m[64];
    int rc[64];
    for (size_t c0 = 0; c0 < ncols; c0 += 64) {
        size_t w = ncols - c0 < 64 ? ncols - c0 : 64;
        for (size_t c = 0; c < w; c++) m[c] = pool_get(ar);
        ug_exact_dot_cols(m, a, B + c0, ldb, n, w, rc);
        for (size_t c = 0; c < w; c++) {
            if (rc[c] != 0) dot_d_mpfr(ar, m[c], a, 1, B + c0 + c, ldb, n);
            out[c0 + c] = num_exact(m[c]);
        }
    }
}

double ug_mp_round(mpfr_srcptr x, ug_dtype dt)
{
    const ug_dtype_info *in = ug_dtype_get_info(dt);
    /* NaN, infinities and zeros follow dtype.h's rules exactly (int8: NaN -> 0; e8m0: NaN) */
    if (mpfr_nan_p(x)) return ug_dtype_round_fast(dt, NAN);
    if (mpfr_inf_p(x)) return ug_dtype_round_fast(dt, mpfr_sgn(x) > 0 ? INFINITY : -INFINITY);
    if (mpfr_zero_p(x)) return ug_dtype_round_fast(dt, mpfr_signbit(x) ? -0.0 : 0.0);
    if (!in->is_float) {
        if (dt == UG_DT_E8M0) return ug_dtype_round_fast(dt, mpfr_get_d(x, MPFR_RNDZ)); /* floor log2 kept */
        mpfr_t t;
        mpfr_init2(t, mpfr_get_prec(x) > 64 ? mpfr_get_prec(x) : 64);
        mpfr_rint(t, x, MPFR_RNDN);                                   /* rounds: RNE to an integer */
        double r = ug_dtype_round_fast(dt, mpfr_get_d(t, MPFR_RNDN)); /* saturates */
        mpfr_clear(t);
        return r;
    }
    long binade = mpfr_get_exp(x) - 1; /* floor(log2|x|) */
    if (binade < in->emin) binade = in->emin;
    if (binade > 1100) return ug_dtype_round_fast(dt, mpfr_sgn(x) > 0 ? INFINITY : -INFINITY);
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(x));
    mpfr_mul_2si(t, x, in->mant_bits - binade, MPFR_RNDN);                   /* exact: power of two */
    mpfr_rint(t, t, MPFR_RNDN);                                              /* rounds: RNE to the dtype's grid */
    double r = ldexp(mpfr_get_d(t, MPFR_RNDN), (int)binade - in->mant_bits); /* exact */
    mpfr_clear(t);
    if (fabs(r) > in->max_finite) r = dt == UG_DT_E4M3 ? copysign(in->max_finite, r) : copysign(INFINITY, r);
    return r;
}

int ug_cert_round(ug_dtype dt, double v, double e, double *g) { return ug_cv_round(dt, v, e, g); }

void ug_ar_emit(ug_ar *ar, int out, size_t k, ug_num x)
{
    if (out < 0 || out >= ar->nsinks) return;
    ug_ar_sink *s = &ar->sinks[out];
    ar->emitted++;
    switch (ar->mode) {
    case UG_AR_EXACT:
    case UG_AR_MPFR_SEQ:
        s->gstar[k] = mpfr_get_d(x.m, MPFR_RNDN);
        s->g[k] = ug_mp_round(x.m, s->dt);
        break;
    case UG_AR_CERT: {
        int sure = ug_cert_round(s->dt, x.v, x.e, &s->g[k]);
        s->gstar[k] = x.v;
        if (s->unsure) s->unsure[k] = (unsigned char)!sure;
        if (!sure) ar->unsure++;
        break;
    }
    case UG_AR_DEVICE: /* only the bound, where one is asked for: the values are CERT's and EXACT's */
        if (s->bound) s->bound[k] = x.e;
        break;
    default: /* NAIVE and F64: the rounded value; the nearest double where one is asked for */
        if (s->gstar) s->gstar[k] = x.v;
        s->g[k] = ug_dtype_round_fast(s->dt, x.v);
        break;
    }
}

void ug_ar_emit_block(ug_ar *ar, int out, size_t k0, const double *v, const double *e, size_t n)
{
    if (out < 0 || out >= ar->nsinks) return;
    ug_ar_sink *s = &ar->sinks[out];
    switch (ar->mode) {
    case UG_AR_CERT: ar->unsure += ug_cv_put_block(s, k0, v, e, n); break;
    case UG_AR_DEVICE:
        if (s->bound) memcpy(s->bound + k0, e, n * sizeof *e);
        break;
    case UG_AR_NAIVE:
    case UG_AR_F64:
        if (s->gstar) memcpy(s->gstar + k0, v, n * sizeof *v);
        for (size_t i = 0; i < n; i++) s->g[k0 + i] = ug_dtype_round_fast(s->dt, v[i]); /* rounds: the output's dtype */
        break;
    default: abort(); /* the MPFR arithmetics emit one number at a time */
    }
    ar->emitted += n;
}
