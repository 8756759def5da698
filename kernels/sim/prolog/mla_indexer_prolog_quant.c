/* mla_indexer_prolog_quant.c — sim kernel and planted-bug mutants of
 * mla_indexer_prolog_quant, DeepSeek-V3.2's MLA prolog and lightning indexer prolog (int8)
 * fused on one x. The device model is the two halves' own, composed over this op's call:
 *   MLA half: mla_prolog_quant's kernel (ug_mlaq_k_run, mla_prolog_quant_core.h), which binds
 *     this op's tensors and params under its names and writes q_nope_abs, q_rope, the
 *     exported q_norm / q_norm_scale and the three MLA caches;
 *   indexer half: the lightning indexer prologs' per-token kernel (indexer_prolog_sim.h,
 *     int8 format) with this op's idx_eps, LayerNorm, and the shared cos/sin as given tables;
 *     it binds q_norm / q_norm_scale, here this op's outputs, so its q is dequantised from the
 *     codes and scale the MLA half has just stored (the fusion's staging point: the int8 dot
 *     exact in int32, then fp32 products), and it writes q_i8, q_scale, weights and the k row
 *     of each token at the token's slot_mapping entry, the slot of its MLA cache rows.
 * Mutants, the bugs of fusing the two: the indexer's q taken from c_q before quantisation
 * (bf16 c_q.w_qb in fp32 times w_qb_scale, the q_norm codes and scale bypassed), the
 * indexer's LayerNorm with the MLA's eps (one epsilon attribute for both halves: only rows
 * whose variance is near 1e-5 see it), the indexer's k normalised with the MLA's RMSNorm (no
 * mean, no beta), and the indexer half writing a padding token (slot -1) into its cache's
 * last slot where the MLA half skips it.
 * Legal variants: each half's own (mla_prolog_quant's and the indexer prologs', prolog_legal.h)
 * at once: every fp32 dot and norm sum one sequential fmaf chain (legal_seq_fma) or K-tiles
 * of 64 summed pairwise (legal_tile64); every norm's rstd from an rsqrt 3 fp32 ulps off
 * (legal_fn_ulps). At the plan's default seed the two orders put code 101 against g* =
 * 102.54 on case 1035665f2b777161's q_norm@oracle_scale (a legal bf16 flip of token 15's
 * amax, its scale 2^-7 high, and one of c_q[15,17]): two codes from the nearest, within
 * the view's budget (1/16 + 2^-6 |g*| = 1.67 quanta), which the boundary-aware compare
 * admits (oracles/verdict.c, code_reached). */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/prolog/indexer_prolog_sim.h"
#include "kernels/sim/prolog/mla_prolog_quant_core.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

/* The q-from-c_q mutant's device: the MLA weights (for c_q) and w_qb widened to fp32. */
typedef struct {
    ug_mlaq_k_w w;
    const ulpgym_tensor *x, *wqb, *wqs;
    float *wq, *cq, *xr, *q, *s; /* [L][H*D], [L], [h], [H*D], [H*D] */
    size_t hd;
} mip_cq;

static void cq_free(mip_cq *m)
{
    ug_mlaq_k_free(&m->w);
    free(m->wq), free(m->cq), free(m->xr), free(m->q), free(m->s);
}

static int cq_open(mip_cq *m, const ulpgym_call *call, const ug_params *p, char *err, size_t errlen)
{
    const ulpgym_tensor *wdq, *gq, *wuq, *wuqs, *wuk, *wdkv, *gkv;
    const ulpgym_tensor **slots[] = {&m->x, &wdq, &gq, &wuq, &wuqs, &wuk, &wdkv, &gkv, &m->wqb, &m->wqs};
    if (ug_sim_bind(call, "x w_dq gamma_q w_uq w_uq_scale w_uk w_dkv gamma_kv w_qb w_qb_scale", slots, err, errlen))
        return -2;
    ug_mlaq_k_w *w = &m->w;
    const ug_mla_indexer_prolog_quant_params *params = UG_P(mla_indexer_prolog_quant, p);
    w->h = (size_t)params->h, w->Lq = (size_t)params->q_lora, w->N = (size_t)params->heads;
    w->Lkv = (size_t)params->kv_lora, w->dn = (size_t)params->d_nope, w->dr = (size_t)params->d_rope;
    w->dq = w->dn + w->dr, w->group = (size_t)params->kv_group, w->eps = (float)params->eps;
    m->hd = (size_t)(params->idx_heads * params->idx_d);
    m->wq = malloc(w->Lq * m->hd * sizeof *m->wq), m->cq = malloc(w->Lq * sizeof *m->cq);
    m->xr = malloc(w->h * sizeof *m->xr), m->q = malloc(m->hd * sizeof *m->q), m->s = malloc(m->hd * sizeof *m->s);
    if (ug_mlaq_k_load(w, wdq, gq, wuq, wuqs, wuk, wdkv, gkv) || !m->wq || !m->cq || !m->xr || !m->q || !m->s)
        return -1;
    ug_sim_load(m->wqb, 0, w->Lq * m->hd, m->wq); /* exact: int8 in fp32 */
    ug_sim_load(m->wqs, 0, m->hd, m->s);
    return 0;
}

/* The mutant's q of token t: (c_q.w_qb) in fp32 times w_qb_scale, c_q before quantisation. */
static const float *cq_query(mip_cq *m, size_t t)
{
    static const ug_mlaq_k_bugs none = {0};
    size_t L = m->w.Lq, hd = m->hd;
    ug_sim_load(m->x, t * m->w.h, m->w.h, m->xr);
    ug_mlaq_k_cq(&m->w, m->xr, m->cq, &none);
    for (size_t j = 0; j < hd; j++) m->q[j] = 0.0f;
    for (size_t k = 0; k < L; k++)
        for (size_t j = 0; j < hd; j++) m->q[j] += m->cq[k] * m->wq[k * hd + j]; /* rounds: fp32 (the bug's path) */
    for (size_t j = 0; j < hd; j++) m->q[j] *= m->s[j];                          /* rounds: fp32 */
    return m->q;
}

/* The indexer half over this op's call (after the MLA half has stored q_norm / q_norm_scale). */
static int indexer_half(const ulpgym_call *call, const ug_params *p, ug_variant_code bug, char *err, size_t errlen)
{
    float eps =
        (float)ug_p_num(p, bug == UG_VAR_MUT_IDX_EPS_SHARED ? "eps" : "idx_eps"); /* exact: fp32 values (bug: MLA's) */
    lip_sim_opts o = {eps, bug == UG_VAR_MUT_IDX_K_RMSNORM, 1};                   /* bug: the MLA's RMSNorm */
    int status;
    ug_variant_code lb = bug == UG_VAR_MUT_IDX_PAD_SLOT_WRAPS  ? UG_VAR_MUT_PAD_SLOT_WRAPS
                         : ug_pl_of_variant(bug) != UG_PL_NONE ? bug
                                                               : UG_VAR_SIM; /* a legal variant: the indexer's own */
    lip_sim *s = lip_sim_open_ex(call, LIP8_INT8, lb, &o, err, errlen, &status);
    if (!s) return status;
    mip_cq m = {0};
    int rc = bug == UG_VAR_MUT_IDX_Q_FROM_CQ ? cq_open(&m, call, p, err, errlen) : 0;
    for (size_t t = 0; !rc && t < lip_sim_tokens(s); t++)
        lip_sim_token_q(s, t,
                        bug == UG_VAR_MUT_IDX_Q_FROM_CQ ? cq_query(&m, t) : NULL); /* NULL: q from q_norm (staged) */
    cq_free(&m);
    lip_sim_close(s);
    return rc;
}

static int mip_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_prolog_legal legal = ug_pl_of_variant(bug);
    int rc = ug_mlaq_k_run_legal(call, err, errlen, 0, legal);
    if (rc) return rc;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    rc = indexer_half(call, &p, bug, err, errlen);
    ug_params_free(&p);
    return rc;
}

const ug_kernel_fn ug_sim_mla_indexer_prolog_quant = mip_kernel;
