/* sqa_check.h — checks shared by the tests of the two sparse int8-cache attentions
 * (test_op_sparse_flash_attention_quant, test_op_sparse_attention_antiquant): the
 * builder's block table and top-k lists, an independent long-double evaluation through
 * the block table that the oracle must match, a direct kernel call on tampered indices
 * and table entries, and the refusal of bad params. Each test supplies the op's spec text
 * and its own slot decoder (the one thing the two ops differ in).
 *
 * Static inline functions in a header so each test program stays one file. */
#ifndef UG_SQA_CHECK_H
#define UG_SQA_CHECK_H
#include "core/ops.h"
#include "core/registry.h"
#include "gl_attn_check.h"

/* The exact 576 key values of cache slot `slot` (the op's layout), decoded by the test. */
typedef void (*sqa_decode_fn)(const ug_case *c, size_t slot, double *row);

/* Element (r, t) of an int32 tensor of row length w. */
static inline long sqa_i(const ug_case *c, const char *name, size_t r, size_t w, size_t t)
{
    return (long)ug_tload(ug_case_input(c, name), r * w + t);
}

/* Checks seq_lens, the block table and every row's index list against the rules of the
 * semantics; returns how many -1 slots sit before a valid one (scattered padding). */
static inline long sqa_check_lists(const ug_case *c, long batch, long sq, long topk, long bs, long nb, int tail_only)
{
    const ug_tensor *bt = ug_case_input(c, "block_table");
    long mb = bt->shape[1], inner = 0;
    for (long b = 0; b < batch; b++) {
        long len = sqa_i(c, "seq_lens", 0, 0, (size_t)b);
        for (long j = 0; j < mb; j++) {
            long id = sqa_i(c, "block_table", (size_t)b, (size_t)mb, (size_t)j);
            CHECK(j * bs < len ? id >= 0 && id < nb : id == -1, "block_table[%ld][%ld] = %ld", b, j, id);
        }
        for (long i = 0; i < sq; i++) {
            size_t r = (size_t)(b * sq + i);
            long vis = len - sq + 1 + i, cnt = vis < topk ? vis : topk, valid = 0, seen_pad = 0, dup = 0;
            for (long s = 0; s < topk; s++) {
                long p = sqa_i(c, "topk_indices", r, (size_t)topk, (size_t)s);
                if (s >= cnt) {
                    CHECK(p == 0, "row %zu slot %ld past the count holds %ld, not 0", r, s, p);
                    continue;
                }
                if (p == -1) {
                    seen_pad = 1;
                    continue;
                }
                CHECK(p >= 0 && p < vis, "row %zu slot %ld = %ld outside 0..%ld", r, s, p, vis - 1);
                for (long t = 0; t < s; t++) dup += sqa_i(c, "topk_indices", r, (size_t)topk, (size_t)t) == p;
                inner += seen_pad;
                valid++;
            }
            CHECK(valid >= 1 && dup == 0, "row %zu: %ld valid slots, %ld repeats", r, valid, dup);
        }
    }
    if (tail_only) CHECK(inner == 0, "pad tail left %ld -1s before valid slots", inner);
    return inner;
}

/* Independent reference of output element (row, head, col): the row's keys found through
 * the block table by the test, softmax(scale q·K)·V in long double. */
static inline long double sqa_ref(const ug_case *c, sqa_decode_fn decode, long heads, long sq, long topk, long bs,
                                  double scale, size_t rh, size_t col)
{
    static long double s[4096];
    static double kv[4096 * 576];
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    size_t r = rh / (size_t)heads, b = r / (size_t)sq, n = 0, mb = (size_t)ug_case_input(c, "block_table")->shape[1];
    long vis = sqa_i(c, "seq_lens", 0, 0, b) - sq + 1 + (long)(r % (size_t)sq);
    for (long t = 0; t < (vis < topk ? vis : topk) && n < 4096; t++) {
        long p = sqa_i(c, "topk_indices", r, (size_t)topk, (size_t)t);
        if (p < 0) continue;
        long blk = sqa_i(c, "block_table", b, mb, (size_t)(p / bs));
        double *row = kv + n * 576;
        decode(c, (size_t)(blk * bs + p % bs), row);
        long double acc = 0;
        for (size_t e = 0; e < 512; e++) acc += (long double)qn->values[rh * 512 + e] * row[e];
        for (size_t e = 0; e < 64; e++) acc += (long double)qr->values[rh * 64 + e] * row[512 + e];
        s[n++] = acc * (long double)scale;
    }
    return gl_ref_softmax_pv(s, n, kv, 576, col);
}

/* The reference test's golden of row rh (reference_golden): the row's keys found through
 * the block table by the test, fp32 scores (a double sum rounded once) times the fp32
 * scale, the fp32 softmax, P/l cast to bf16, the fp32 P.V over the 512 values; o[512].
 * Returns 0, or -1 where there is no golden (no key, a non-finite score or sum). */
static inline int sqa_golden_row(const ug_case *c, sqa_decode_fn decode, long heads, long sq, long topk, long bs,
                                 double scale, size_t rh, float *o)
{
    static float w[4096];
    static double kv[4096 * 576];
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    size_t r = rh / (size_t)heads, b = r / (size_t)sq, n = 0, mb = (size_t)ug_case_input(c, "block_table")->shape[1];
    long vis = sqa_i(c, "seq_lens", 0, 0, b) - sq + 1 + (long)(r % (size_t)sq);
    float m = -INFINITY, l = 0.0f;
    for (long t = 0; t < (vis < topk ? vis : topk) && n < 4096; t++) {
        long p = sqa_i(c, "topk_indices", r, (size_t)topk, (size_t)t);
        if (p < 0) continue;
        double *row = kv + n * 576, acc = 0;
        decode(c, (size_t)(sqa_i(c, "block_table", b, mb, (size_t)(p / bs)) * bs + p % bs), row);
        for (size_t e = 0; e < 512; e++) acc += qn->values[rh * 512 + e] * row[e];
        for (size_t e = 0; e < 64; e++) acc += qr->values[rh * 64 + e] * row[512 + e];
        w[n] = (float)acc * (float)scale;
        if (!isfinite(w[n])) return -1;
        m = fmaxf(m, w[n++]);
    }
    for (size_t j = 0; j < n; j++) l += w[j] = expf(w[j] - m);
    if (!n || !isfinite(l)) return -1;
    for (size_t e = 0; e < 512; e++) o[e] = 0.0f;
    for (size_t j = 0; j < n; j++) {
        float p = (float)ug_dtype_round(UG_DT_BF16, w[j] / l);
        for (size_t e = 0; e < 512; e++) o[e] += p * (float)kv[j * 576 + e];
    }
    return 0;
}

/* Runs spec on the sim kernel (every element checked): PASS, a clean self-check, the
 * lists valid, and the oracle within 1e-12 of sqa_ref on every element; the op's
 * reference golden equal to sqa_golden_row's on every element. */
static inline void sqa_differential(const char *spec, sqa_decode_fn decode, long batch, long heads, long sq, long topk,
                                    long bs, long nb, double scale)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "differential case: %s %s",
          ug_outcome_name(r.outcome), r.message);
    sqa_check_lists(&d.c, batch, sq, topk, bs, nb, 0);
    double worst = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        size_t flat = d.oracle.sel.idx[0][k];
        long double ref = sqa_ref(&d.c, decode, heads, sq, topk, bs, scale, flat / 512, flat % 512);
        worst = fmax(worst, fabs((double)ref - d.oracle.gstar[0][k]));
    }
    CHECK(d.oracle.sel.n[0] == (size_t)(batch * sq * heads * 512) && worst < 1e-12,
          "oracle and the long-double reference differ by %g over %zu elements", worst, d.oracle.sel.n[0]);
    double *golden[UG_MAX_TENSORS] = {0};
    golden[0] = malloc(d.oracle.sel.n[0] * sizeof *golden[0]);
    char err[256] = "";
    CHECK(d.c.def->reference_golden && d.c.def->reference_golden(&d.c, &d.oracle.sel, golden, err, sizeof err) == 0,
          "reference golden: %s", err);
    size_t differ = 0, have = (size_t)-1;
    int ok = 0;
    static float o[512];
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        size_t flat = d.oracle.sel.idx[0][k];
        if (flat / 512 != have)
            have = flat / 512, ok = sqa_golden_row(&d.c, decode, heads, sq, topk, bs, scale, have, o) == 0;
        double want = ok ? ug_dtype_round(UG_DT_BF16, o[flat % 512]) : NAN;
        differ += !(want == golden[0][k] || (isnan(want) && isnan(golden[0][k])));
    }
    CHECK(differ == 0, "reference golden: %zu of %zu elements differ from the test's evaluation", differ,
          d.oracle.sel.n[0]);
    free(golden[0]);
    ug_exec_detail_free(&d);
}

/* With topk 1 each row has one key: o must be its dequantised value row exactly, in the
 * oracle and in the sim kernel. */
static inline void sqa_single_key(const char *spec, sqa_decode_fn decode, long heads, long sq, long bs)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "did not run: %s", r.message);
    size_t off_o = 0, off_k = 0, mb = (size_t)ug_case_input(&d.c, "block_table")->shape[1];
    double row[576];
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        size_t flat = d.oracle.sel.idx[0][k], rr = flat / 512 / (size_t)heads, b = rr / (size_t)sq;
        long p = sqa_i(&d.c, "topk_indices", rr, 1, 0), blk = sqa_i(&d.c, "block_table", b, mb, (size_t)(p / bs));
        decode(&d.c, (size_t)(blk * bs + p % bs), row);
        off_o += d.oracle.g[0][k] != row[flat % 512];
        off_k += d.a[0][k] != row[flat % 512];
    }
    CHECK(r.outcome == UG_OUT_PASS && off_o == 0 && off_k == 0,
          "one key: %zu oracle, %zu kernel elements differ from the key's dequantised row (%s)", off_o, off_k,
          ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

/* Runs variant on spec and expects outcome want (PASS: invisible there; FAIL: caught). */
static inline void sqa_expect(const char *spec, const char *variant, ug_outcome want)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, variant, &r, &d) == 0 && r.outcome == want, "%s: %s where %s was expected (%s)", variant,
          ug_outcome_name(r.outcome), ug_outcome_name(want), r.message);
    ug_exec_detail_free(&d);
}

/* Calls op's sim kernel directly on spec's case after setting int32 element i of tensor
 * `name` to v: the kernel must refuse (-2) with a message naming the tensor. */
static inline void sqa_tampered(const char *spec, const char *op, const char *name, size_t i, long v)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "did not run: %s", r.message);
    ug_tensor *t = ug_case_input_mut(&d.c, name);
    ug_dtype_store(UG_DT_INT32, t->data, i, (double)v);
    ulpgym_tensor ins[UG_MAX_TENSORS], outs[UG_MAX_TENSORS];
    ulpgym_call call;
    ug_case_make_call(&d.c, ins, outs, &call);
    char err[256] = "";
    int rc = ug_op_run_variant(ug_op_find(op), ug_op_variants(ug_op_find(op)), &call, err, sizeof err);
    CHECK(rc == -2 && strstr(err, name), "%s[%zu] = %ld: kernel returned %d (%s)", name, i, v, rc, err);
    ug_exec_detail_free(&d);
}

#endif
