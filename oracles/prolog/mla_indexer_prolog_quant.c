/* mla_indexer_prolog_quant.c — the definition of mla_indexer_prolog_quant, DeepSeek-V3.2's
 * MLA prolog (int8 q_b, int8 paged kv cache) and lightning indexer prolog (int8) fused on
 * one x, composed from the two halves without copying either (declaration:
 * mla_indexer_prolog_quant.json):
 *   MLA half: mla_prolog_quant's check, builder (slot_mapping, cos, sin) and oracle, which
 *     read this op's params and tensors under their own names (mla_prolog_quant_core.h);
 *     its seven outputs come first, in its order;
 *   indexer half: the per-token oracle of lightning_indexer_prolog_quant
 *     (indexer_prolog_fp8.h, ug_lip_open_ex) with this op's params mapped onto its own
 *     (hidden = h, heads = idx_heads, d = idx_d, rope = d_rope, eps = idx_eps, the shared
 *     cos/sin read as given tables) and its q source the kernel's exported q_norm and
 *     q_norm_scale outputs: the staged fusion point.
 * Facts from hicann/pypto-gym tests/ops/deepseek_v32_exp/test_mla_indexer_prolog_quant.py:
 * one x, cos/sin [t, 64] and cache_index feed both halves; the indexer's q_norm /
 * q_norm_scale are the MLA golden's quantised rms_norm_out and its scale; MLA eps 1e-5
 * (both norms), indexer LayerNorm eps 1e-6 with gamma/beta, dense given Hadamards; the
 * check compares qNope, qRope, kv, kr, kScaleCache, q_int8 (atol 2), q_scale, k_int8,
 * k_scale and weights (the declaration's reference_* fields). Primary: certified, as
 * mla_prolog_quant's (its MLA half's kr_cache rule; certified catches every mutant pypto does). */
#include <stdio.h>

#include "oracles/oracle.h"
#include "oracles/prolog/indexer_prolog_fp8.h"
#include "oracles/prolog/mla_prolog_quant_core.h"
#include "oracles/verdict.h"
#include "op_params.h"

enum { O_Q8 = 2, O_QS = 3, N_MLA_OUT = 7 };

static int check(const ug_params *P, char *err, size_t errlen)
{
    int rc = ug_mlaq_check(P, err, errlen);
    if (rc) return rc;
    const ug_mla_indexer_prolog_quant_params *params = UG_P(mla_indexer_prolog_quant, P);
    long D = params->idx_d, dr = params->d_rope;
    if (D != 32 && D != 64 && D != 128)
        return snprintf(err, errlen, "mla_indexer_prolog_quant: param \"idx_d\" = %ld must be 32, 64 or 128", D), -2;
    if (dr > D)
        return snprintf(err, errlen,
                        "mla_indexer_prolog_quant: param \"d_rope\" = %ld must be <= \"idx_d\" = %ld (the "
                        "indexer rotates the first d_rope dims of its rows)",
                        dr, D),
               -2;
    return 0;
}

/* This op's params as the indexer pipeline's. */
static ug_lip_params lip_params_of(const ug_params *P)
{
    const ug_mla_indexer_prolog_quant_params *typed = UG_P(mla_indexer_prolog_quant, P);
    return (ug_lip_params){typed->tokens,
                           typed->h,
                           typed->idx_heads,
                           typed->idx_d,
                           typed->d_rope,
                           typed->blocks,
                           typed->block_size,
                           0,
                           0,
                           typed->idx_eps,
                           10000.0,
                           0,
                           1,
                           typed->hadamard == UG_MLA_INDEXER_PROLOG_QUANT_HADAMARD_GIVEN};
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int rc = ug_mlaq_oracle(c, ar, sel);
    if (rc) return rc;
    ug_lip_params p = lip_params_of(&c->params);
    /* staged: the indexer's q from the kernel's exported q_norm codes and q_norm_scale */
    ug_lip_ctx *k = ug_lip_open_ex(c, UG_LIP_INT8, NULL, &p, &c->out[O_Q8], &c->out[O_QS]);
    if (!k) return -1;
    for (size_t t = 0; t < (size_t)p.tokens; t++) ug_lip_token(k, c, ar, sel, t);
    ug_lip_close(k, ar, sel);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    if (out < N_MLA_OUT)
        ug_mlaq_geometry(c, out, g);
    else
        ug_lip8_geometry(c, out, g);
}

/* The MLA half's scratch, the indexer kernel's (fp32 w_k and w_proj, row buffers, its token
 * block with the packed w_qb, int32 q dots and fp32 q rows) and oracle's (writer map, a row
 * of numbers, the q_norm row), and the fp32 w_qb and c_q row of the q-from-c_q mutant. */
static double scratch(const ug_params *P)
{
    const ug_mla_indexer_prolog_quant_params *params = UG_P(mla_indexer_prolog_quant, P);
    double h = (double)params->h, H = (double)params->idx_heads, D = (double)params->idx_d, L = (double)params->q_lora,
           S = (double)params->blocks * (double)params->block_size;
    return ug_mlaq_scratch(P) + 4 * (h * (D + H) + 8 * D + 2 * H) + ug_lip8_kernel_block_bytes(h, H, D, L) + 12 * S +
           2 * D * UG_NUM_BYTES + 8 * L + 4 * (L * H * D + L);
}

/* The reference goldens of the indexer's weights, q_scale and k_scale: its test's golden
 * casts to bf16 between the stages, as lightning_indexer_prolog_quant's
 * (indexer_prolog_fp8.h); its q rows start from the kernel's exported q_norm codes and
 * scale, as the oracle's do. */
static int reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ug_lip_weights_golden(c, sel, out, "h", "idx_heads", "idx_d");
    ug_lip_params p = lip_params_of(&c->params);
    ug_lip_scales_golden(c, sel, out, &p, &c->out[O_Q8], &c->out[O_QS]);
    return 0;
}

const ug_op_def ug_opdef_mla_indexer_prolog_quant = {.decl.check = check,
                                                     .build = ug_mlaq_build,
                                                     .oracle = oracle,
                                                     .geometry = geometry,
                                                     .scratch = scratch,
                                                     .reference_golden = reference_golden};
