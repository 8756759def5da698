/* test_op_sparse_flash_attention.c — checks of sparse_flash_attention beyond the generic
 * plan test:
 *  - the builder's index lists: valid entries distinct and in range, -1 only at the tail
 *    for pad "tail", scattered -1s for pad "scattered", at least one valid per token;
 *  - one valid key per token: o must equal that kv row's first 512 dims exactly, in the
 *    oracle and in the sim kernel;
 *  - the oracle agrees with an independent long-double evaluation on a padded case;
 *  - the padding mutant is invisible without padding and caught with it;
 *  - several sequences (seqlens): the prefix-sum tensors, each token's read slots (the first
 *    min(w, topk), w its causal window) naming distinct rows of its own window and -1 after,
 *    the unread slots holding K[b-1]-1 as the reference's, the oracle against the long-double
 *    evaluation, and the two sequence mutants caught only in a later sequence;
 *  - bad params are refused with a message naming them. */
#include "gl_attn_check.h"

#define N01 "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"
#define SPEC(params)                                                                                                   \
    "{\"v\":1,\"op\":\"sparse_flash_attention\",\"dtype\":\"bf16\",\"seed\":9,\"plan\":\"test\",\"params\":" params    \
    ",\"dist\":{\"q\":" N01 ",\"kv\":" N01 "}}"

/* Checks token lists; returns how many -1 sit before a valid entry (scattered padding). */
static long check_indices(const ug_case *c, long tokens, long topk, long kv_len, int tail_only)
{
    const ug_tensor *it = ug_case_input(c, "indices");
    long inner_pads = 0;
    for (long t = 0; t < tokens; t++) {
        long valid = 0, seen_pad = 0, dup = 0;
        for (long i = 0; i < topk; i++) {
            long j = (long)ug_tload(it, (size_t)(t * topk + i));
            if (j == -1) {
                seen_pad = 1;
                continue;
            }
            CHECK(j >= 0 && j < kv_len, "indices[%ld][%ld] = %ld out of range", t, i, j);
            inner_pads += seen_pad;
            for (long k = 0; k < i; k++) dup += (long)ug_tload(it, (size_t)(t * topk + k)) == j;
            valid++;
        }
        CHECK(valid >= 1 && dup == 0, "token %ld: %ld valid indices, %ld repeats", t, valid, dup);
    }
    if (tail_only) CHECK(inner_pads == 0, "pad tail left %ld -1s before valid entries", inner_pads);
    return inner_pads;
}

static void test_single_key(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"tokens\":5,\"heads\":3,\"kv_len\":50,\"topk\":1}"), "sim", &r, &d) == 0, "did not run: %s",
          r.message);
    const ug_tensor *kv = ug_case_input(&d.c, "kv"), *it = ug_case_input(&d.c, "indices");
    size_t off_oracle = 0, off_kernel = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        size_t flat = d.oracle.sel.idx[0][k], t = flat / 512 / 3, col = flat % 512;
        double want = kv->values[(size_t)ug_tload(it, t) * 576 + col];
        off_oracle += d.oracle.g[0][k] != want;
        off_kernel += d.a[0][k] != want;
    }
    CHECK(d.oracle.sel.n[0] == 5 * 3 * 512 && off_oracle == 0 && off_kernel == 0,
          "one key: %zu oracle, %zu kernel elements differ from the key's value row", off_oracle, off_kernel);
    ug_exec_detail_free(&d);
}

/* The oracle's o against a long-double softmax over the valid slots among the first e[t]
 * of each token (all topk without e). */
static double differential(const ug_exec_detail *d, long heads, long topk, const long *e, float scale)
{
    const ug_tensor *q = ug_case_input(&d->c, "q"), *kv = ug_case_input(&d->c, "kv"),
                    *it = ug_case_input(&d->c, "indices");
    static long double s[256];
    static double v[256 * 576];
    double worst = topk <= 256 ? 0 : INFINITY;
    for (size_t k = 0; topk <= 256 && k < d->oracle.sel.n[0]; k++) {
        size_t row = d->oracle.sel.idx[0][k] / 512, col = d->oracle.sel.idx[0][k] % 512, t = row / (size_t)heads, n = 0;
        for (size_t i = 0; i < (size_t)(e ? e[t] : topk); i++) {
            long j = (long)ug_tload(it, t * (size_t)topk + i);
            if (j < 0) continue;
            long double acc = 0;
            for (size_t e = 0; e < 576; e++)
                acc += (long double)q->values[row * 576 + e] * kv->values[(size_t)j * 576 + e];
            s[n] = acc * (long double)scale;
            memcpy(v + n++ * 576, kv->values + (size_t)j * 576, 576 * sizeof *v);
        }
        worst = fmax(worst, fabs((double)gl_ref_softmax_pv(s, n, v, 576, col) - d->oracle.gstar[0][k]));
    }
    return worst;
}

static void test_padded_differential(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"tokens\":4,\"heads\":2,\"kv_len\":300,\"topk\":150,\"pad\":\"scattered\",\"scale\":0.1}"),
                  "sim", &r, &d) == 0,
          "did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "padded case: %s %s", ug_outcome_name(r.outcome),
          r.message);
    CHECK(check_indices(&d.c, 4, 150, 300, 0) > 0, "pad scattered left no -1 before a valid entry");
    double worst = differential(&d, 2, 150, NULL, 0.1f);
    CHECK(worst < 1e-12, "oracle and the long-double reference differ by %g", worst);
    ug_exec_detail_free(&d);
}

/* Packed sequences q_b:kv_b (seq, n of them): actual_q_len / actual_kv_len hold the prefix
 * sums; token i of sequence b reads its first e = min(w, topk) slots, w = kv_b - q_b + 1 + i,
 * each -1 or a distinct row of K[b-1]..K[b-1]+w-1, at least one valid; slots from e on hold
 * K[b-1] - 1 (the reference's -1 shifted by the sequence's first row). e gets each token's e. */
static void check_packed(const ug_case *c, const long *seq, size_t n, long topk, long *e_of)
{
    const ug_tensor *it = ug_case_input(c, "indices"), *aq = ug_case_input(c, "actual_q_len"),
                    *ak = ug_case_input(c, "actual_kv_len");
    CHECK(aq && ak && aq->numel == n && ak->numel == n, "actual_q_len / actual_kv_len missing or not [%zu]", n);
    long t = 0, k0 = 0, q0 = 0, bad = 0;
    for (size_t b = 0; aq && ak && b < n; q0 += seq[2 * b], k0 += seq[2 * b + 1], b++) {
        CHECK(ug_tload(aq, b) == q0 + seq[2 * b] && ug_tload(ak, b) == k0 + seq[2 * b + 1], "prefix sums at %zu", b);
        for (long i = 0; i < seq[2 * b]; i++, t++) {
            long w = seq[2 * b + 1] - seq[2 * b] + 1 + i, e = w < topk ? w : topk, valid = 0;
            e_of[t] = e;
            for (long s = 0; s < topk; s++) {
                long j = (long)ug_tload(it, (size_t)(t * topk + s));
                if (s >= e || j == -1) {
                    bad += s >= e && j != k0 - 1;
                    continue;
                }
                bad += j < k0 || j >= k0 + w;
                for (long r = 0; r < s; r++) bad += (long)ug_tload(it, (size_t)(t * topk + r)) == j;
                valid++;
            }
            bad += valid == 0;
        }
    }
    CHECK(bad == 0, "%ld index slots break the window rules", bad);
}

static void test_packed(void)
{
    static const long seq[] = {3, 40, 4, 20, 2, 70}, tail[] = {1, 1, 3, 3, 2, 196};
    long e[9];
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"tokens\":9,\"heads\":4,\"kv_len\":130,\"topk\":32,\"seqlens\":\"3:40,4:20,2:70\"}"), "sim",
                  &r, &d) == 0 &&
              r.outcome == UG_OUT_PASS,
          "packed case: %s %s", ug_outcome_name(r.outcome), r.message);
    check_packed(&d.c, seq, 3, 32, e);
    double worst = differential(&d, 4, 32, e, 1.0f / 24);
    CHECK(worst < 1e-12, "packed: oracle and the long-double reference differ by %g", worst);
    ug_exec_detail_free(&d);
    CHECK(opc_run(SPEC("{\"tokens\":6,\"heads\":2,\"kv_len\":200,\"topk\":64,\"seqlens\":\"1:1,3:3,2:196\","
                       "\"pad\":\"tail\"}"),
                  "sim", &r, &d) == 0 &&
              r.outcome == UG_OUT_PASS,
          "packed tail case: %s %s", ug_outcome_name(r.outcome), r.message);
    check_packed(&d.c, tail, 3, 64, e);
    ug_exec_detail_free(&d);
}

/* The two sequence mutants are the correct kernel in a first sequence and caught in a
 * later one with short windows (the kv offset lost; the unread slots read). */
static void test_seq_mutants(void)
{
    static const char *const mutants[] = {"mut_seq_kv_offset", "mut_all_slots"};
    ug_result r;
    ug_exec_detail d;
    for (int m = 0; m < 2; m++) {
        CHECK(opc_run(SPEC("{\"tokens\":9,\"heads\":4,\"kv_len\":130,\"topk\":32,\"seqlens\":\"3:40,4:20,2:70\"}"),
                      mutants[m], &r, &d) == 0 &&
                  r.outcome == UG_OUT_FAIL,
              "%s went unnoticed in a later sequence: %s", mutants[m], ug_outcome_name(r.outcome));
        ug_exec_detail_free(&d);
        CHECK(opc_run(SPEC("{\"tokens\":2,\"heads\":2,\"kv_len\":20,\"topk\":20,\"seqlens\":\"2:20\"}"), mutants[m], &r,
                      &d) == 0 &&
                  r.outcome == UG_OUT_PASS,
              "in a first sequence %s is the correct kernel, yet: %s %s", mutants[m], ug_outcome_name(r.outcome),
              r.message);
        ug_exec_detail_free(&d);
    }
}

static void test_padding_mutant(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"tokens\":6,\"heads\":2,\"kv_len\":100,\"topk\":40,\"pad\":\"tail\"}"), "mut_pad_as_zero", &r,
                  &d) == 0,
          "did not run: %s", r.message);
    check_indices(&d.c, 6, 40, 100, 1);
    CHECK(r.outcome == UG_OUT_FAIL, "reading -1 as row 0 went unnoticed: %s", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
    CHECK(opc_run(SPEC("{\"tokens\":6,\"heads\":2,\"kv_len\":100,\"topk\":40}"), "mut_pad_as_zero", &r, &d) == 0 &&
              r.outcome == UG_OUT_PASS,
          "without padding the mutant is the correct kernel, yet: %s %s", ug_outcome_name(r.outcome), r.message);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"kv_len\":10,\"topk\":11}", "topk"},
        {"{\"kv_len\":10,\"topk\":4,\"pad\":\"head\"}", "pad"},
        {"{\"kv_len\":10,\"topk\":4,\"scale\":0}", "scale"},
        {"{\"kv_len\":10,\"topk\":4,\"scale\":1e39}", "scale"},
        {"{\"tokens\":3,\"kv_len\":10,\"topk\":4,\"seqlens\":\"2:5,1:4\"}", "seqlens"},
        {"{\"tokens\":3,\"kv_len\":12,\"topk\":4,\"seqlens\":\"2:1,1:11\"}", "seqlens"},
        {"{\"tokens\":1,\"kv_len\":5,\"topk\":1,\"seqlens\":\"0:5\"}", "seqlens"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("%s"), bad);
}

int main(void)
{
    test_single_key();
    test_padded_differential();
    test_padding_mutant();
    test_packed();
    test_seq_mutants();
    test_bad_params();
    return check_done();
}
