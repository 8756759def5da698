/* verdict.c — metrics and standards of docs/STANDARDS.md. Every threshold below is the
 * one docs/STANDARDS.md documents; the comment beside each says which row. */
#include "oracles/verdict.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mp/arith.h"

#define UG_MF(field, name, kind)                                                                                       \
    {                                                                                                                  \
        name, offsetof(ug_metrics, field), kind                                                                        \
    }
const ug_metric_field ug_metric_fields[] = {
    UG_MF(n, "n_checked", UG_MF_COUNT),
    UG_MF(n_total, "n_total", UG_MF_COUNT),
    UG_MF(n_nonfinite_mismatch, "nonfinite_mismatch", UG_MF_COUNT),
    UG_MF(max_abs, "max_abs", UG_MF_REAL),
    UG_MF(max_abs_idx, "max_abs_index", UG_MF_INDEX),
    UG_MF(max_rel, "max_rel", UG_MF_REAL),
    UG_MF(max_rel_idx, "max_rel_index", UG_MF_INDEX),
    UG_MF(max_ulp, "max_ulp", UG_MF_REAL),
    UG_MF(max_ulp_idx, "max_ulp_index", UG_MF_INDEX),
    UG_MF(mean_ulp, "mean_ulp", UG_MF_REAL),
    UG_MF(mere, "mere", UG_MF_REAL),
    UG_MF(mare, "mare", UG_MF_REAL),
    UG_MF(rmse, "rmse", UG_MF_REAL),
    UG_MF(eb, "eb", UG_MF_REAL),
    UG_MF(small_err_ratio, "small_err_ratio", UG_MF_REAL),
    UG_MF(cosine, "cosine", UG_MF_REAL),
    UG_MF(b_max_abs, "bench_max_abs", UG_MF_REAL),
    UG_MF(b_mere, "bench_mere", UG_MF_REAL),
    UG_MF(b_mare, "bench_mare", UG_MF_REAL),
    UG_MF(b_rmse, "bench_rmse", UG_MF_REAL),
    UG_MF(b_small_err_ratio, "bench_small_err_ratio", UG_MF_REAL),
};
#undef UG_MF
const int ug_metric_nfields = (int)(sizeof ug_metric_fields / sizeof *ug_metric_fields);

double ug_metric_value(const ug_metrics *m, const ug_metric_field *f)
{
    const char *p = (const char *)m + f->offset;
    return f->kind == UG_MF_REAL ? *(const double *)p : (double)*(const size_t *)p;
}

void ug_metrics_none(ug_metrics *m, size_t total)
{
    memset(m, 0, sizeof *m);
    m->n_total = total;
    for (int i = 0; i < ug_metric_nfields; i++)
        if (ug_metric_fields[i].kind == UG_MF_REAL) *(double *)((char *)m + ug_metric_fields[i].offset) = NAN;
}

const char *ug_vstate_name(ug_vstate v) { return v == UG_V_PASS ? "PASS" : v == UG_V_FAIL ? "FAIL" : "NA"; }

static const char *outcome_names[] = {"PASS", "FAIL", "SKIP", "ERROR", "CRASH", "TIMEOUT", "SHAPE", "NONFINITE"};
const char *ug_outcome_name(ug_outcome o) { return (unsigned)o <= UG_OUT_NONFINITE ? outcome_names[o] : "?"; }
int ug_outcome_find(const char *name)
{
    for (int i = 0; name && i <= UG_OUT_NONFINITE; i++)
        if (strcmp(outcome_names[i], name) == 0) return i;
    return -1;
}

void ug_small_value(ug_dtype dt, double *threshold, double *atol)
{
    /* msprobe benchmark standard: fp32 1e-6 / 1e-9, fp16 and bf16 1e-3 / 1e-5 */
    if (dt == UG_DT_FP32) {
        *threshold = 1e-6;
        *atol = 1e-9;
    } else {
        *threshold = 1e-3;
        *atol = 1e-5;
    }
}

static double rel_err(double a, double gs) { return fabs(a - gs) / (fabs(gs) + 1e-7); }

/* ULP error in dtype dt: |a-g*| * 2^(-e+m), e = max(floor(log2|g*|), emin). */
static double ulp_err(ug_dtype dt, double a, double gs) { return fabs(a - gs) / ug_dtype_ulp(dt, gs); }

/* ug_dtype_ulp(dt, g) for a g at or above ulp_floor(dt), inline (the metrics' loop runs it on
 * every element): 2^(e - mant) with e = floor(log2|g|) >= emin, the exponent of the double g,
 * a normal double there; 1 for an integer format. */
static inline double ulp_at(const ug_dtype_info *d, double g)
{
    if (!d->is_float) return 1.0;
    uint64_t u;
    memcpy(&u, &g, sizeof u);
    return ug_pow2_normal((int)((u >> 52) & 0x7ffu) - 1023 - d->mant_bits);
}

/* Whether an element's error is measured in ulps: its exact value is at least the smallest
 * normal of a float format (any value of an integer one). Below it (an exact 0 above all)
 * one ulp is the subnormal spacing, 2^-133 in bf16, and a correct-looking error of 1e-4
 * would read 1e36 ulps: such elements are measured by their absolute error (max_abs)
 * alone. The floor |g*| must reach, computed once per output. */
static double ulp_floor(ug_dtype dt)
{
    const ug_dtype_info *d = ug_dtype_get_info(dt);
    return d->is_float ? ldexp(1.0, d->emin) : 0.0;
}

static int both_nonfinite_same(double a, double gs)
{
    if (isnan(gs)) return isnan(a);
    if (isinf(gs)) return isinf(a) && signbit(a) == signbit(gs);
    return 0;
}

void ug_metrics_compute(ug_dtype dt, size_t n, const size_t *idx, size_t n_total, const double *a, const double *gstar,
                        const double *bench, ug_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->n_total = n_total;
    double sv, satol, sum_rel = 0, sum_sq = 0, sum_eb = 0, sum_ulp = 0, dot = 0, na = 0, ng = 0;
    double b_sum_rel = 0, b_sum_sq = 0;
    size_t counted = 0, n_ulp = 0;
    const double floor_ulps = ulp_floor(dt);
    const ug_dtype_info *info = ug_dtype_get_info(dt);
    ug_small_value(dt, &sv, &satol);
    for (size_t i = 0; i < n; i++) {
        double x = a[i], gs = gstar[i];
        if (!isfinite(x) || !isfinite(gs)) {
            if (!both_nonfinite_same(x, gs)) m->n_nonfinite_mismatch++;
            continue;
        }
        counted++;
        int in_ulps = fabs(gs) >= floor_ulps;
        double ae = fabs(x - gs), re = rel_err(x, gs), ue = in_ulps ? ae / ulp_at(info, gs) : 0.0;
        n_ulp += (size_t)in_ulps;
        if (ae > m->max_abs || counted == 1) {
            m->max_abs = ae;
            m->max_abs_idx = idx[i];
        }
        if (re > m->max_rel) {
            m->max_rel = re;
            m->max_rel_idx = idx[i];
        }
        if (ue > m->max_ulp) {
            m->max_ulp = ue;
            m->max_ulp_idx = idx[i];
        }
        sum_rel += re;
        sum_sq += ae * ae;
        sum_eb += (x - gs) / fmax(1.0, fabs(gs));
        sum_ulp += ue;
        dot += x * gs;
        na += x * x;
        ng += gs * gs;
        if (fabs(gs) < sv) {
            m->n_small++;
            if (ae > satol) m->n_small_err++;
        }
        if (bench) {
            double b = bench[i], be = fabs(b - gs);
            if (!isfinite(b)) be = INFINITY;
            m->b_max_abs = fmax(m->b_max_abs, be);
            double bre = isfinite(b) ? rel_err(b, gs) : INFINITY;
            m->b_mare = fmax(m->b_mare, bre);
            b_sum_rel += bre;
            b_sum_sq += be * be;
            if (fabs(gs) < sv && be > satol) m->b_n_small_err++;
        }
    }
    if (counted) {
        m->mere = sum_rel / (double)counted;
        m->mare = m->max_rel;
        m->rmse = sqrt(sum_sq / (double)counted);
        m->eb = sum_eb / (double)counted;
        m->mean_ulp = n_ulp ? sum_ulp / (double)n_ulp : 0.0;
        m->b_mere = b_sum_rel / (double)counted;
        m->b_rmse = sqrt(b_sum_sq / (double)counted);
    }
    m->cosine = (na > 0 && ng > 0) ? dot / (sqrt(na) * sqrt(ng)) : (na == ng ? 1.0 : 0.0);
    if (m->n_small) {
        m->small_err_ratio = (double)m->n_small_err / (double)m->n_small;
        m->b_small_err_ratio = (double)m->b_n_small_err / (double)m->n_small;
    }
}

static int is_std_float(ug_dtype dt) { return dt == UG_DT_FP32 || dt == UG_DT_FP16 || dt == UG_DT_BF16; }

int ug_int8_exact_tie(double v, double sd, double *code)
{
    double q = v / sd; /* rounds: double; exact when the remainder below is 0 */
    if (!(isfinite(q) && fma(q, sd, -v) == 0.0 && q - floor(q) == 0.5)) return 0;
    *code = ug_dtype_round(UG_DT_INT8, q);
    return 1;
}

double ug_tie_golden(ug_dtype dt, double a, double g, double gstar, double bound)
{
    if (!(bound > 0) || !is_std_float(dt) || !isfinite(gstar) || !isfinite(g) || gstar == g || a == g) return g;
    double other = 2 * gstar - g; /* the neighbour across g*, where g* is a tie (exact then: both lie within 2 ulp) */
    if (a != other || ug_dtype_round(dt, other) != other) return g;
    /* adjacent, and g* halfway: the points between each end and g* round to that end */
    int tie = gstar - g == other - gstar && ug_dtype_round(dt, 0.5 * (g + gstar)) == g &&
              ug_dtype_round(dt, 0.5 * (other + gstar)) == other;
    return tie ? other : g;
}

double *ug_judged_goldens(const ug_judged *j)
{
    double *t = j->bound ? malloc((j->n ? j->n : 1) * sizeof *t) : NULL;
    for (size_t i = 0; t && i < j->n; i++) t[i] = ug_tie_golden(j->dt, j->a[i], j->g[i], j->gstar[i], j->bound[i]);
    return t;
}

static double golden(const ug_judged *j, size_t i)
{
    if (j->tie_g) return j->tie_g[i];
    return j->bound ? ug_tie_golden(j->dt, j->a[i], j->g[i], j->gstar[i], j->bound[i]) : j->g[i];
}

/* Counts elements (finite on both sides) with |a-g| > atol + rtol*|g| (g: golden()). */
static size_t count_outside(const ug_judged *j, double atol, double rtol)
{
    size_t bad = 0;
    for (size_t i = 0; i < j->n; i++) {
        double a = j->a[i], g = golden(j, i);
        if (!isfinite(a) || !isfinite(g)) continue; /* judged as NaN/Inf mismatch */
        if (fabs(a - g) > atol + rtol * fabs(g)) bad++;
    }
    return bad;
}

double ug_reference_ratio(const ug_output_rule *r, double a, double g)
{
    if (!isfinite(a) || !isfinite(g)) return NAN;
    return fabs(a - g) / (r->reference_atol + r->reference_rtol * fabs(g));
}

/* Element i under the reference rule: its ratio against g, or where the output has the
 * test's own golden, the smaller of that and its ratio against the golden (an element within
 * the rule of either passes; a NaN golden is none). NaN where a or g is not finite. */
static double reference_ratio(const ug_judged *j, size_t i)
{
    double q = ug_reference_ratio(j->rule, j->a[i], golden(j, i));
    if (j->ref_golden && isfinite(q)) {
        double qt = ug_reference_ratio(j->rule, j->a[i], j->ref_golden[i]);
        q = qt < q ? qt : q; /* NaN qt: not taken */
    }
    return q;
}

/* A figure of a thresholds text as JSON: "%.*g", or null where it is not finite (JSON has
 * no inf or NaN: a benchmark evaluation that overflows gives an infinite max_abs_limit, and
 * the stored text must still parse: docs/STANDARDS.md). */
typedef struct {
    char s[32];
} json_num;

static json_num jnum(double v, int digits)
{
    json_num r;
    if (isfinite(v))
        snprintf(r.s, sizeof r.s, "%.*g", digits, v);
    else
        snprintf(r.s, sizeof r.s, "null");
    return r;
}

/* The (k+1)-th largest of v[0..n) (v is reordered), 0 when n <= k: Hoare's selection. */
static double kth_largest(double *v, size_t n, size_t k)
{
    if (n <= k) return 0.0;
    long lo = 0, hi = (long)n - 1, kk = (long)k;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) { /* descending: the larger values to the left */
            while (v[i] > pivot) i++;
            while (v[j] < pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return v[kk]; /* between the two parts: equal to the pivot */
    }
    return v[kk];
}

/* How much of a budgeted per-element rule an output uses: the smallest factor the tolerance
 * could shrink by before more than `allowed` elements fall outside it, i.e. the
 * (allowed+1)-th largest ratio error / tolerance over the finite elements. The rule holds
 * exactly when it is at most 1 (at most `allowed` ratios above 1), so it reads the same in
 * a PASS (headroom: 0.3 uses a third) and a FAIL (2.5: the tolerance would have to be 2.5x).
 * ratio(j, i, ctx) is element i's ratio, NaN for an element judged apart (NaN/Inf). */
static double budget_used(const ug_judged *j, double (*ratio)(const ug_judged *, size_t, const void *), const void *ctx,
                          size_t allowed)
{
    double *v = malloc((j->n ? j->n : 1) * sizeof *v);
    if (!v) return NAN;
    size_t m = 0;
    for (size_t i = 0; i < j->n; i++) {
        double r = ratio(j, i, ctx);
        if (!isnan(r)) v[m++] = r;
    }
    double used = kth_largest(v, m, allowed);
    free(v);
    return used;
}

/* |a - g| / (atol + rtol*|g|), NaN where either is not finite; ctx: {atol, rtol}. */
static double tol_ratio(const ug_judged *j, size_t i, const void *ctx)
{
    const double *t = ctx;
    double a = j->a[i], g = golden(j, i);
    return isfinite(a) && isfinite(g) ? fabs(a - g) / (t[0] + t[1] * fabs(g)) : NAN;
}

/* The largest |a - g*| / (c*B + ulp(g)/2) over the finite checked elements (0 without a
 * bound); *violations gets how many exceed 1. */
static double certified_worst(const ug_judged *j, size_t *violations)
{
    double worst = 0.0, c = j->cert_c > 0 ? j->cert_c : UG_CERT_C;
    size_t bad = 0;
    for (size_t i = 0; j->bound && i < j->n; i++) {
        double a = j->a[i], gs = j->gstar[i];
        if (!isfinite(a) || !isfinite(gs)) continue; /* NaN/Inf: matched or counted apart */
        double allowed = c * j->bound[i] + 0.5 * ug_dtype_ulp(j->dt, j->g[i]), err = fabs(a - gs);
        if (!(err <= allowed)) bad++;
        double r = err / allowed;
        worst = r > worst ? r : worst;
    }
    if (violations) *violations = bad;
    return worst;
}

static ug_vstate judge_certified(const ug_judged *j, char *thr, size_t len)
{
    if (!j->bound) {
        snprintf(thr, len, "{}");
        return UG_V_NA;
    }
    size_t bad;
    double worst = certified_worst(j, &bad);
    snprintf(thr, len, "{\"c\":%g,\"fn_ulps\":%d,\"violations\":%zu,\"worst\":%s,\"used\":%s}",
             j->cert_c > 0 ? j->cert_c : UG_CERT_C, UG_DEV_FN_ULPS, bad, jnum(worst, 4).s, jnum(worst, 4).s);
    return bad ? UG_V_FAIL : UG_V_PASS;
}

double ug_tolerance_margin(const ug_judged *j)
{
    if (j->rule && j->rule->cmp != UG_CMP_NUMERIC) { /* discrete: any differing code is near */
        for (size_t i = 0; i < j->n; i++)
            if (j->a[i] != j->g[i] && !(isnan(j->a[i]) && isnan(j->g[i]))) return INFINITY;
        return 0.0;
    }
    if (j->m->n_nonfinite_mismatch) return INFINITY;
    double atol = j->rule ? j->rule->pypto_atol : 1e-3, rtol = j->rule ? j->rule->pypto_rtol : 1e-3, worst = 0.0;
    for (size_t i = 0; i < j->n; i++) {
        double a = j->a[i], g = golden(j, i);
        if (!isfinite(a) || !isfinite(g)) continue;
        double r = fabs(a - g) / (atol + rtol * fabs(g));
        worst = r > worst ? r : worst;
    }
    if (j->rule && j->rule->has_reference) /* the reference rule is re-checked near its edge too */
        for (size_t i = 0; i < j->n; i++) {
            double r = reference_ratio(j, i);
            worst = r > worst ? r : worst; /* NaN: not taken */
        }
    return fmax(worst, certified_worst(j, NULL));
}

static double reference_ratio_of(const ug_judged *j, size_t i, const void *ctx)
{
    (void)ctx;
    return reference_ratio(j, i);
}

/* The reference test's rule as written there: atol + rtol*|g| per element, a share of the
 * checked elements allowed outside (0: none, as assert_allclose). */
static ug_vstate judge_reference(const ug_judged *j, char *thr, size_t len)
{
    const ug_output_rule *r = j->rule;
    if (!r || !r->has_reference) {
        snprintf(thr, len, "{\"note\":\"no reference test for this output\"}");
        return UG_V_NA;
    }
    size_t bad = 0, bad_exact = 0;
    for (size_t i = 0; i < j->n; i++) {
        bad += reference_ratio(j, i) > 1.0; /* NaN: not counted */
        bad_exact += ug_reference_ratio(r, j->a[i], golden(j, i)) > 1.0;
    }
    size_t allowed = (size_t)llround(r->reference_budget * (double)j->n);
    double used = budget_used(j, reference_ratio_of, NULL, allowed);
    int n = snprintf(thr, len,
                     "{\"atol\":%.6g,\"rtol\":%.6g,\"budget\":%.6g,\"allowed\":%zu,\"failed\":%zu,"
                     "\"used\":%s,\"golden\":",
                     r->reference_atol, r->reference_rtol, r->reference_budget, allowed, bad, jnum(used, 4).s);
    if (n > 0 && (size_t)n < len) { /* with the test's golden: how many the exact value alone would fail */
        if (j->ref_golden)
            snprintf(thr + n, len - (size_t)n, "\"exact or test\",\"failed_exact\":%zu}", bad_exact);
        else
            snprintf(thr + n, len - (size_t)n, "\"exact\"}");
    }
    return bad <= allowed ? UG_V_PASS : UG_V_FAIL;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The golden ids of one group at the positions where kernel and golden differ (exp, m of
 * them) that are missing from the kernel's ids at those positions (act, sorted here). */
static size_t ids_missing(const double *exp, double *act, size_t m)
{
    qsort(act, m, sizeof *act, cmp_double);
    size_t missing = 0;
    for (size_t k = 0; k < m; k++) missing += bsearch(&exp[k], act, m, sizeof *act, cmp_double) == NULL;
    return missing;
}

/* reference on a topk_set output whose test judges ids (core/ops.h reference_group: the
 * reference suite's topk_idx_compare): the checked ids in groups of G consecutive flat
 * positions against the test's golden ids (j->ref_golden), at most floor(G * atol) golden
 * ids missing per group. The golden's order matters only across a group's edge. */
static ug_vstate judge_reference_topk(const ug_judged *j, char *thr, size_t len)
{
    const ug_output_rule *r = j->rule;
    size_t G = (size_t)r->reference_group, allowed = (size_t)((double)G * r->reference_atol); /* Python's int() */
    double *act = malloc((j->n ? j->n : 1) * sizeof *act), *exp = malloc((j->n ? j->n : 1) * sizeof *exp);
    if (!j->ref_golden || !act || !exp) {
        free(act), free(exp);
        snprintf(thr, len, "{\"note\":\"%s\"}", j->ref_golden ? "out of memory" : "no golden ids");
        return UG_V_NA;
    }
    size_t worst = 0, failed = 0;
    for (size_t i = 0; i < j->n;) {
        size_t group = j->idx[i] / G, m = 0;
        for (; i < j->n && j->idx[i] / G == group; i++)
            if (j->a[i] != j->ref_golden[i]) act[m] = j->a[i], exp[m] = j->ref_golden[i], m++;
        size_t missing = ids_missing(exp, act, m);
        worst = missing > worst ? missing : worst;
        failed += missing > allowed;
    }
    free(act), free(exp);
    double used = allowed ? (double)worst / (double)allowed : worst ? INFINITY : 0.0;
    snprintf(thr, len,
             "{\"rule\":\"topk_idx_compare\",\"group\":%zu,\"allowed\":%zu,\"worst_group\":%zu,"
             "\"failed\":%zu,\"used\":%s,\"golden\":\"test\"}",
             G, allowed, worst, failed, jnum(used, 4).s);
    return failed ? UG_V_FAIL : UG_V_PASS;
}

static ug_vstate judge_pypto(const ug_judged *j, char *thr, size_t len)
{
    double atol = j->rule ? j->rule->pypto_atol : 1e-3, rtol = j->rule ? j->rule->pypto_rtol : 1e-3;
    double budget = j->rule ? j->rule->pypto_budget : 0.005;
    size_t bad = count_outside(j, atol, rtol), allowed = (size_t)llround(budget * (double)j->n);
    double tol[2] = {atol, rtol};
    snprintf(thr, len, "{\"atol\":%.6g,\"rtol\":%.6g,\"budget\":%.6g,\"allowed\":%zu,\"failed\":%zu,\"used\":%s}", atol,
             rtol, budget, allowed, bad, jnum(budget_used(j, tol_ratio, tol, allowed), 4).s);
    return bad <= allowed ? UG_V_PASS : UG_V_FAIL;
}

static ug_vstate judge_allclose(const ug_judged *j, char *thr, size_t len)
{
    double rtol, atol = 1e-5;
    switch (j->dt) { /* torch.testing.assert_close defaults */
    case UG_DT_FP16: rtol = 1e-3; break;
    case UG_DT_BF16: rtol = 1.6e-2; break;
    case UG_DT_FP32: rtol = 1.3e-6; break;
    default: snprintf(thr, len, "{}"); return UG_V_NA;
    }
    size_t bad = count_outside(j, atol, rtol);
    double tol[2] = {atol, rtol};
    snprintf(thr, len, "{\"atol\":%.6g,\"rtol\":%.6g,\"failed\":%zu,\"used\":%s}", atol, rtol, bad,
             jnum(budget_used(j, tol_ratio, tol, 0), 4).s);
    return bad == 0 ? UG_V_PASS : UG_V_FAIL;
}

/* The small-value floor of the relative standards (dual_thousandth, mere_mare): an element
 * whose exact value is below the threshold (msprobe's: fp16 2^-11, bf16 2^-8, fp32 2^-14;
 * e4m3 / e5m2 their smallest normal) is judged by its absolute error against atol (fp16
 * and bf16 2^-16, fp32 2^-30; e4m3 / e5m2 their smallest subnormal) instead of a relative
 * error, which a correctly rounded tiny or subnormal value can exceed. 0: no floor. */
static int small_value_floor(ug_dtype dt, double *threshold, double *atol)
{
    switch (dt) {
    case UG_DT_FP16: *threshold = 0x1p-11, *atol = 0x1p-16; return 1;
    case UG_DT_BF16: *threshold = 0x1p-8, *atol = 0x1p-16; return 1;
    case UG_DT_FP32: *threshold = 0x1p-14, *atol = 0x1p-30; return 1;
    case UG_DT_E4M3: *threshold = 0x1p-6, *atol = 0x1p-9; return 1;
    case UG_DT_E5M2: *threshold = 0x1p-14, *atol = 0x1p-16; return 1;
    default: return 0;
    }
}

/* Element i under the floor: 1 small and within atol, 2 small and beyond, 0 not small. */
static int small_value_verdict(const ug_judged *j, size_t i, double threshold, double atol)
{
    if (fabs(j->gstar[i]) >= threshold) return 0;
    return fabs(j->a[i] - j->gstar[i]) <= atol ? 1 : 2;
}

static ug_vstate judge_dual(const ug_judged *j, char *thr, size_t len)
{
    double t;
    switch (j->dt) { /* fp16 1e-3, bf16 4e-3, fp32 1e-4 */
    case UG_DT_FP16: t = 1e-3; break;
    case UG_DT_BF16: t = 4e-3; break;
    case UG_DT_FP32: t = 1e-4; break;
    default: snprintf(thr, len, "{}"); return UG_V_NA;
    }
    double small, small_atol;
    small_value_floor(j->dt, &small, &small_atol);
    size_t bad = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!isfinite(j->a[i]) || !isfinite(j->gstar[i])) continue;
        int sv = small_value_verdict(j, i, small, small_atol);
        bad += sv ? sv == 2 : rel_err(j->a[i], j->gstar[i]) > t;
    }
    double share = j->n ? (double)bad / (double)j->n : 0.0;
    snprintf(thr, len, "{\"t\":%.6g,\"small_below\":%.6g,\"small_atol\":%.6g,\"share\":%s,\"used\":%s}", t, small,
             small_atol, jnum(share, 6).s, jnum(share / t, 4).s);
    return share < t ? UG_V_PASS : UG_V_FAIL;
}

/* judge_mixed's thresholds per output dtype. */
static const struct {
    ug_dtype dt;
    double rtol, atol, floor_;
} mixed_thresholds[] = {
    {UG_DT_FP16, 0x1p-9, 0x1p-9, 0.1}, {UG_DT_BF16, 0x1p-6, 0x1p-6, 1.0}, {UG_DT_FP32, 0x1p-10, 0x1p-16, 1e-2},
    {UG_DT_E4M3, 0x1p-2, 0x1p-4, 1.0}, {UG_DT_E5M2, 0x1p-1, 0x1p-3, 0.1},
};

static ug_vstate judge_mixed(const ug_judged *j, char *thr, size_t len)
{
    size_t k = 0, nk = sizeof mixed_thresholds / sizeof mixed_thresholds[0];
    while (k < nk && mixed_thresholds[k].dt != j->dt) k++;
    if (k == nk) {
        snprintf(thr, len, "{}");
        return UG_V_NA;
    }
    double rtol = mixed_thresholds[k].rtol, atol = mixed_thresholds[k].atol, floor_ = mixed_thresholds[k].floor_;
    size_t bad = count_outside(j, atol, rtol), big = 0;
    for (size_t i = 0; i < j->n; i++) {
        double a = j->a[i], g = j->g[i];
        if (isfinite(a) && isfinite(g) && fabs(a - g) > fmax(floor_, 32.0 * ug_dtype_ulp(j->dt, g))) big++;
    }
    double matched = j->n ? 1.0 - (double)bad / (double)j->n : 1.0;
    snprintf(thr, len, "{\"rtol\":%.6g,\"atol\":%.6g,\"floor\":%.6g,\"matched\":%s,\"over_max\":%zu,\"used\":%s}", rtol,
             atol, floor_, jnum(matched, 6).s, big, jnum(big ? INFINITY : (1.0 - matched) / 0.01, 4).s);
    return matched >= 0.99 && big == 0 ? UG_V_PASS : UG_V_FAIL;
}

static ug_vstate judge_mere_mare(const ug_judged *j, char *thr, size_t len)
{
    double t;
    switch (j->dt) { /* fp16 2^-10, bf16 2^-7, fp32 2^-13, e4m3 2^-3, e5m2 2^-2 */
    case UG_DT_FP16: t = 0x1p-10; break;
    case UG_DT_BF16: t = 0x1p-7; break;
    case UG_DT_FP32: t = 0x1p-13; break;
    case UG_DT_E4M3: t = 0x1p-3; break;
    case UG_DT_E5M2: t = 0x1p-2; break;
    default: snprintf(thr, len, "{}"); return UG_V_NA;
    }
    /* MERE / MARE over the elements above the small-value floor; those below it must each
     * stay within its atol */
    double small, small_atol, sum = 0, mare = 0;
    small_value_floor(j->dt, &small, &small_atol);
    size_t n = 0, small_bad = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!isfinite(j->a[i]) || !isfinite(j->gstar[i])) continue;
        int sv = small_value_verdict(j, i, small, small_atol);
        if (sv) {
            small_bad += sv == 2;
            continue;
        }
        double r = fabs(j->a[i] - j->gstar[i]) / fabs(j->gstar[i]);
        sum += r;
        mare = r > mare ? r : mare;
        n++;
    }
    double mere = n ? sum / (double)n : 0.0;
    double used = small_bad ? INFINITY : fmax(mere / t, mare / (10 * t));
    snprintf(thr, len,
             "{\"T\":%.6g,\"small_below\":%.6g,\"small_atol\":%.6g,\"mere\":%s,\"mare\":%s,"
             "\"small_beyond_atol\":%zu,\"used\":%s}",
             t, small, small_atol, jnum(mere, 6).s, jnum(mare, 6).s, small_bad, jnum(used, 4).s);
    return mere < t && mare < 10 * t && small_bad == 0 ? UG_V_PASS : UG_V_FAIL;
}

static ug_vstate judge_ulp(const ug_judged *j, char *thr, size_t len)
{
    if (!is_std_float(j->dt)) {
        snprintf(thr, len, "{}");
        return UG_V_NA;
    }
    double limit = j->dt == UG_DT_FP32 ? 32.0 : 1.0;
    size_t bad = 0;
    for (size_t i = 0; i < j->n; i++)
        if (isfinite(j->a[i]) && isfinite(j->gstar[i]) && ulp_err(j->dt, j->a[i], j->gstar[i]) > limit) bad++;
    double share = j->n ? (double)bad / (double)j->n : 0.0;
    int pass = j->dt == UG_DT_FP32 ? (j->m->mean_ulp < 64.0 || share < 0.05) : share < 0.001;
    double used = j->dt == UG_DT_FP32 ? fmin(j->m->mean_ulp / 64.0, share / 0.05) : share / 0.001;
    snprintf(thr, len, "{\"ulp_limit\":%g,\"share_above\":%s,\"mean_ulp\":%s,\"used\":%s}", limit, jnum(share, 6).s,
             jnum(j->m->mean_ulp, 6).s, jnum(used, 4).s);
    return pass ? UG_V_PASS : UG_V_FAIL;
}

static ug_vstate judge_benchmark(const ug_judged *j, char *thr, size_t len)
{
    double min_err;
    switch (j->dt) { /* fp16 2^-11, bf16 2^-8, fp32 2^-14 */
    case UG_DT_FP16: min_err = 0x1p-11; break;
    case UG_DT_BF16: min_err = 0x1p-8; break;
    case UG_DT_FP32: min_err = 0x1p-14; break;
    default: snprintf(thr, len, "{}"); return UG_V_NA;
    }
    if (!j->bench) {
        snprintf(thr, len, "{\"note\":\"no benchmark evaluation\"}");
        return UG_V_NA;
    }
    static const double lim[3][3] = {{10, 2, 2}, {5, 1.5, 1.5}, {2, 1.2, 1.2}}; /* MARE, MERE, RMSE per level */
    int lv = j->bench_level < 0 || j->bench_level > 2 ? 0 : j->bench_level;
    const ug_metrics *m = j->m;
    double r_mare = m->mare / fmax(m->b_mare, min_err), r_mere = m->mere / fmax(m->b_mere, min_err);
    double r_rmse = m->rmse / fmax(m->b_rmse, min_err);
    double small_limit = 2.0 * (double)(m->b_n_small_err ? m->b_n_small_err : 1);
    double max_g = 0;
    for (size_t i = 0; i < j->n; i++)
        if (isfinite(j->gstar[i])) max_g = fmax(max_g, fabs(j->gstar[i]));
    double abs_limit = 2.0 * m->b_max_abs + 0.5 * ug_dtype_ulp(j->dt, max_g);
    int pass = r_mare <= lim[lv][0] && r_mere <= lim[lv][1] && r_rmse <= lim[lv][2] &&
               (double)m->n_small_err <= small_limit && m->max_abs <= abs_limit;
    snprintf(thr, len,
             "{\"level\":\"L%d\",\"min_err\":%.6g,\"mare_ratio\":%s,\"mare_max\":%g,\"mere_ratio\":%s,"
             "\"mere_max\":%g,\"rmse_ratio\":%s,\"rmse_max\":%g,\"small_errs\":%zu,\"small_max\":%g,"
             "\"max_abs\":%s,\"max_abs_limit\":%s}",
             lv, min_err, jnum(r_mare, 4).s, lim[lv][0], jnum(r_mere, 4).s, lim[lv][1], jnum(r_rmse, 4).s, lim[lv][2],
             m->n_small_err, small_limit, jnum(m->max_abs, 6).s, jnum(abs_limit, 6).s);
    return pass ? UG_V_PASS : UG_V_FAIL;
}

static ug_vstate judge_exact(const ug_judged *j, char *thr, size_t len)
{
    size_t bad = 0;
    for (size_t i = 0; i < j->n; i++)
        if (!(j->a[i] == j->g[i] || (isnan(j->a[i]) && isnan(j->g[i])))) bad++;
    snprintf(thr, len, "{\"differ\":%zu}", bad);
    return bad ? UG_V_FAIL : UG_V_PASS;
}

int ug_boundary_ok(double a, double g, double gstar, double quantum, double budget)
{
    if (a == g) return 1;
    if (fabs(a - g) > quantum * (1 + 1e-12)) return 0;
    double boundary = 0.5 * (a + g); /* the tie point between the two codes */
    return fabs(gstar - boundary) <= budget;
}

/* Code a, more than one quantum from g, is legal where a value within budget of g* rounds
 * to it: a lies between the codes of g* - budget and g* + budget (rounding is monotone).
 * Only a budget wider than a quantum reaches past the neighbouring code (a view whose rtol
 * |g*| is: two legal bf16 flips move a code by up to 2^-6 |code|, 1.6 quanta at 102). */
static int code_reached(ug_dtype dt, double a, double gstar, double budget)
{
    double lo = ug_dtype_round(dt, gstar - budget), hi = ug_dtype_round(dt, gstar + budget); /* rounds: to dt's codes */
    return lo <= a && a <= hi;
}

/* A flip is legal where g* lies within atol quanta + rtol |g*| of the boundary: atol
 * covers the kernel's arithmetic before the rounding (the reference's atol 1 of quantised
 * codes), rtol a tolerated relative error of a scale the codes were divided by (a view
 * against the oracle's own scale: the scale compare's rtol); a code further off is legal
 * where that budget reaches it (code_reached). */
static ug_vstate judge_boundary(const ug_judged *j, char *thr, size_t len)
{
    double budget = j->rule ? j->rule->pypto_atol : 0.0, rel = j->rule ? j->rule->pypto_rtol : 0.0;
    size_t flips = 0, bad = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (isnan(j->a[i]) && isnan(j->g[i])) continue; /* a NaN the contract expects is a match */
        double q = ug_dtype_get_info(j->dt)->is_float ? ug_dtype_ulp(j->dt, j->g[i]) : 1.0;
        if (j->a[i] != j->g[i]) {
            double b = budget * q + rel * fabs(j->gstar[i]);
            if (ug_boundary_ok(j->a[i], j->g[i], j->gstar[i], q, b) ||
                (fabs(j->a[i] - j->g[i]) > q * (1 + 1e-12) && code_reached(j->dt, j->a[i], j->gstar[i], b)))
                flips++;
            else
                bad++;
        }
    }
    snprintf(thr, len, "{\"budget_quanta\":%.6g,\"budget_rel\":%.6g,\"legal_flips\":%zu,\"illegal\":%zu}", budget, rel,
             flips, bad);
    return bad ? UG_V_FAIL : UG_V_PASS;
}

int ug_topk_set_ok(const int *kernel_idx, const int *oracle_idx, int k, const double *scores, int n, double budget)
{
    if (k <= 0) return 1;
    double kth = INFINITY;
    for (int i = 0; i < k; i++) {
        if (oracle_idx[i] < 0 || oracle_idx[i] >= n) return 0;
        kth = fmin(kth, scores[oracle_idx[i]]);
    }
    for (int i = 0; i < k; i++) {
        int id = kernel_idx[i];
        if (id < 0 || id >= n) return 0;
        for (int t = 0; t < i; t++)
            if (kernel_idx[t] == id) return 0; /* duplicates are never legal */
        int in_oracle = 0;
        for (int t = 0; t < k; t++) in_oracle |= oracle_idx[t] == id;
        if (!in_oracle && fabs(scores[id] - kth) > budget) return 0;
    }
    for (int i = 0; i < k; i++) { /* an oracle index the kernel dropped must tie too */
        int id = oracle_idx[i], in_kernel = 0;
        for (int t = 0; t < k; t++) in_kernel |= kernel_idx[t] == id;
        if (!in_kernel && fabs(scores[id] - kth) > budget) return 0;
    }
    return 1;
}

/* topk_set: the set rule needs every candidate's exact score, which only the op's oracle
 * holds; the oracle checks the kernel's ids as a set under its tie rule (ug_topk_set_ok)
 * and emits the kernel's id wherever the set is legal, the exact choice where it is not,
 * so the legal sets are exactly those equal to the emitted ids. */
static ug_vstate judge_topk(const ug_judged *j, char *thr, size_t len)
{
    size_t bad = 0;
    for (size_t i = 0; i < j->n; i++)
        if (j->a[i] != j->g[i]) bad++;
    snprintf(thr, len, "{\"rule\":\"set, ties within the op's bound (oracle)\",\"differ\":%zu}", bad);
    return bad ? UG_V_FAIL : UG_V_PASS;
}

/* The discrete standard that judges a discrete compare. */
static int discrete_standard(ug_cmp c)
{
    return c == UG_CMP_EXACT ? UG_STD_EXACT : c == UG_CMP_BOUNDARY ? UG_STD_BOUNDARY_AWARE : UG_STD_TOPK_SET;
}

ug_vstate ug_standard_judge(int s, const ug_judged *j, char *thr, size_t thrlen)
{
    int discrete = j->rule && j->rule->cmp != UG_CMP_NUMERIC;
    if (discrete && s == UG_STD_CERTIFIED) /* certified holds a discrete output to its discrete rule */
        s = discrete_standard(j->rule->cmp);
    if (s == UG_STD_REFERENCE && discrete && j->rule->reference_group > 0) /* the test's own id compare */
        return judge_reference_topk(j, thr, thrlen);
    if (discrete != ug_standard_is_discrete(s)) {
        snprintf(thr, thrlen, "{}");
        return UG_V_NA;
    }
    if (j->m->n_nonfinite_mismatch) {
        snprintf(thr, thrlen, "{\"nonfinite_mismatch\":%zu}", j->m->n_nonfinite_mismatch);
        return UG_V_FAIL;
    }
    switch (s) {
    case UG_STD_PYPTO: return judge_pypto(j, thr, thrlen);
    case UG_STD_ALLCLOSE: return judge_allclose(j, thr, thrlen);
    case UG_STD_DUAL_THOUSANDTH: return judge_dual(j, thr, thrlen);
    case UG_STD_MIXED_TOLERANCE: return judge_mixed(j, thr, thrlen);
    case UG_STD_MERE_MARE: return judge_mere_mare(j, thr, thrlen);
    case UG_STD_ULP: return judge_ulp(j, thr, thrlen);
    case UG_STD_BENCHMARK: return judge_benchmark(j, thr, thrlen);
    case UG_STD_CERTIFIED: return judge_certified(j, thr, thrlen);
    case UG_STD_REFERENCE: return judge_reference(j, thr, thrlen);
    case UG_STD_EXACT:
        if (j->rule->cmp == UG_CMP_EXACT) return judge_exact(j, thr, thrlen);
        break;
    case UG_STD_BOUNDARY_AWARE:
        if (j->rule->cmp == UG_CMP_BOUNDARY) return judge_boundary(j, thr, thrlen);
        break;
    case UG_STD_TOPK_SET:
        if (j->rule->cmp == UG_CMP_TOPK) return judge_topk(j, thr, thrlen);
        break;
    default: break;
    }
    snprintf(thr, thrlen, "{}"); /* not this output's compare */
    return UG_V_NA;
}

void ug_verdict_combine_outputs(ug_result *r)
{
    for (int s = 0; s < UG_STD_COUNT; s++) {
        ug_vstate v = UG_V_NA;
        for (int k = 0; k < r->n_out; k++) {
            if (r->out[k].verdict[s] == UG_V_FAIL)
                v = UG_V_FAIL;
            else if (r->out[k].verdict[s] == UG_V_PASS && v == UG_V_NA)
                v = UG_V_PASS;
        }
        r->verdict[s] = v;
    }
}

ug_outcome ug_verdict_decide_outcome(const ug_result *r)
{
    for (int k = 0; k < r->n_out; k++)
        if (r->out[k].m.n_nonfinite_mismatch) return UG_OUT_NONFINITE;
    if (r->verdict[r->primary] == UG_V_FAIL) return UG_OUT_FAIL;
    for (int s = UG_STD_EXACT; s <= UG_STD_TOPK_SET; s++)
        if (r->verdict[s] == UG_V_FAIL) return UG_OUT_FAIL;
    return UG_OUT_PASS;
}
