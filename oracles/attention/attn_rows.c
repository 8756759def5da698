/* gl_attn_rows.c — exact softmax(s)·V for one query row (see gl_attn_rows.h).
 *
 * o_d = sum_j e_j v_jd / sum_j e_j with e_j = exp(s_j - max s): the max shift is exact
 * algebra (it cancels), and keeps the double-based arithmetics in range. Only the
 * selected output columns are summed; the scores and e_j are computed once per row. */
#include "oracles/attention/attn_rows.h"

#include "core/philox.h"

long ug_gl_attn_seq_len(uint64_t seed, int ragged, long b, long batch, long ctx)
{
    if (!ragged || b == batch - 1) return ctx;
    uint32_t w[4];
    ug_rng_words(seed, 0x6c656e73u, (uint64_t)b, 0, w);
    return 1 + (long)(w[0] % (uint32_t)ctx);
}

void ug_gl_attn_scores(ug_ar *ar, const double *q, const double *k, size_t ldk, size_t dk, size_t n, ug_num scale,
                       ug_num *s)
{
    for (size_t j = 0; j < n; j++) s[j] = ug_mul(ar, ug_dot_d(ar, q, 1, k + j * ldk, 1, dk), scale);
}

int ug_gl_attn_row_selected(const ug_selection *sel, int out, size_t pos, size_t row, size_t dv)
{
    return pos < sel->n[out] && sel->idx[out][pos] / dv == row;
}

void ug_gl_attn_emit_row(ug_ar *ar, const ug_num *s, ug_num *e, size_t n, const double *v, size_t ldv, size_t dv,
                         int out, const ug_selection *sel, size_t *pos, size_t row)
{
    ug_num total = {0};
    if (n) {
        ug_num m = s[0];
        for (size_t j = 1; j < n; j++) m = ug_max(ar, m, s[j]);
        for (size_t j = 0; j < n; j++) e[j] = ug_exp(ar, ug_sub(ar, s[j], m));
        total = ug_sum(ar, e, n);
    }
    for (; ug_gl_attn_row_selected(sel, out, *pos, row, dv); (*pos)++) {
        size_t d = sel->idx[out][*pos] % dv;
        ug_num o = n ? ug_div(ar, ug_dot_nd(ar, e, v + d, ldv, n), total) : ug_c(ar, 0.0);
        ug_ar_emit(ar, out, *pos, o);
    }
}
