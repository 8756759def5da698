/* gl_attn_check.h — helpers of the GreenLight attention tests (test_op_gqa_decode_attn,
 * test_op_incre_flash_attention_mla, test_op_sparse_flash_attention): run one spec on a
 * sim variant with every output element checked and the case kept (op_check.h's opc_run),
 * and an independent long-double softmax(s)·V that the tests compare the oracle against; the
 * block-table check the paged ops share, and the bad params of the two GLM attention ops.
 * Bad params: op_check.h's opc_expect_refused.
 *
 * Static inline functions in a header so each test program stays one file, shares no
 * state and takes only what it uses. */
#ifndef UG_GL_ATTN_CHECK_H
#define UG_GL_ATTN_CHECK_H
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "op_check.h" /* opc_run: a spec on a sim variant, every element checked */
#include "run/exec.h"

/* A paged cache's block table [B, mb] (test_op_page_attention, test_op_glm_attention):
 * sequence b of len[b] tokens owns its first ceil(len/bs) entries, distinct blocks of the
 * pool of nb; the entries past them hold pad; some sequence's blocks are out of order (the
 * table is shuffled). Returns how many blocks are used. */
static inline long gl_check_block_table(const ug_tensor *bt, const long *len, long nseq, long bs, long nb, long pad)
{
    long mb = bt->shape[1], used = 0, descending = 0, seen[64] = {0};
    for (long b = 0; b < nseq; b++)
        for (long i = 0, n = (len[b] + bs - 1) / bs; i < mb; i++) {
            long id = (long)bt->values[b * mb + i];
            if (i >= n) {
                CHECK(id == pad, "table[%ld][%ld] past the last block is %ld, not %ld", b, i, id, pad);
                continue;
            }
            CHECK(id >= 0 && id < nb && id < 64 && !seen[id], "block %ld used twice or out of range", id);
            if (id >= 0 && id < 64) seen[id] = 1;
            descending += i > 0 && id < (long)bt->values[b * mb + i - 1];
            used++;
        }
    CHECK(descending > 0, "no sequence's blocks are out of order: the table is not shuffled");
    return used;
}

/* Independent reference: sum_j softmax(s)_j v[j*ldv + col], in long double. */
static inline long double gl_ref_softmax_pv(const long double *s, size_t n, const double *v, size_t ldv, size_t col)
{
    if (!n) return 0.0L;
    long double m = s[0], num = 0.0L, den = 0.0L;
    for (size_t j = 1; j < n; j++) m = s[j] > m ? s[j] : m;
    for (size_t j = 0; j < n; j++) {
        long double e = expl(s[j] - m);
        num += e * v[j * ldv + col];
        den += e;
    }
    return num / den;
}

/* The bad params of test_op_glm_attention(_fusion): each row of bad ({params, needle}) in place
 * of the one %s of spec_fmt refused naming needle, and 65 sequences, one over the batch limit,
 * refused naming actual_seqs (params `head`, other params each ending in a comma or "", and
 * the 65 lengths). */
static inline void gl_expect_bad_params(const char *spec_fmt, const char *head, const char *const bad[][2],
                                        size_t n_bad)
{
    opc_expect_refused_each(spec_fmt, bad, n_bad);
    char many[600], spec[2048];
    int n = snprintf(many, sizeof many, "{%s\"actual_seqs\":\"1", head);
    for (int i = 1; i < 65; i++) n += snprintf(many + n, sizeof many - (size_t)n, ",1");
    snprintf(many + n, sizeof many - (size_t)n, "\"}");
    snprintf(spec, sizeof spec, spec_fmt, many);
    opc_expect_refused(spec, "actual_seqs");
}
#define GL_EXPECT_BAD_PARAMS(spec_fmt, head, bad) gl_expect_bad_params(spec_fmt, head, bad, sizeof bad / sizeof bad[0])

#endif
