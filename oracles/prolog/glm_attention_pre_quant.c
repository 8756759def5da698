/* glm_attention_pre_quant.c — param check, exact oracle and geometry of
 * glm_attention_pre_quant, the GLM-4.5 attention prolog (declaration:
 * glm_attention_pre_quant.json; the math per token: glm_pre_quant.h):
 *     r = x + residual -> residual_res (bf16)
 *     n = bf16(r/sqrt(mean r^2 + eps)*gamma + beta)                exported
 *     n_i8 = sat_int8(rint(n*scale_recip + offset))                 exported
 *     mm = bf16((n_i8.W + bias_i32)*deq): qk_mm (exported) | v
 *     qk_norm = bf16(RMSNorm_bias(head of qk_mm))                   exported
 *     q | k = bf16(RoPE_half on dims [0, R) of qk_norm), the rest copied
 * Numerical design. Every bf16 above and the int8 codes are the specification's own
 * roundings (the reference golden rounds n, the matmul output and the head norms to bf16),
 * and each is a place where a correct fp32 kernel lands on the other side of a boundary
 * now and then (its exact value within the kernel's fp32 error of a bf16 tie), and behind
 * RoPE's cancellation one flipped qk_norm value can fail 1e-4 + 2^-7|g|. So the op
 * is staged (docs/STANDARDS.md): the kernel exports n, n_i8, qk_mm and qk_norm, and each
 * stage here starts from the kernel's values of the stage before; every exported bf16 is
 * judged with the reference pair (1e-4 / 2^-7, every element: a one-ulp flip passes, three
 * fail) and by certified. The codes are judged boundary-aware against n_kernel*s + o with
 * a budget of 2^-16 quanta + 2^-23 |value|: a device forms n*s exactly in fp32 and rounds
 * only the sum; an exact tie (k + 1/2 is representable, so a correct device computes it
 * exactly) is decided to the even code here, so a kernel that rounds half away from zero
 * fails on ties (ug_gpq_code_value). The int32 sum is exact; its conversion to fp32 is a
 * declared device rounding (ug_dev_round). Reference suite: hicann/pypto-gym
 * tests/ops/glm_v4_5/test_glm_attention_pre_quant.py (8 tokens, hidden 5120, q 1536,
 * k/v 128, head 128, rotary 64 with cos/sin [T,1,32], eps 1e-5, torch.rand inputs):
 * assert_allclose rtol 2^-7 atol 1e-4 on residual_res, q, k, v (our pypto and reference
 * rules). Primary: pypto. The oracle, geometry and scratch are glm_pre_quant.c's (shared
 * with glm_attention_fusion, whose first eight outputs are these). */
#include "oracles/oracle.h"
#include "oracles/prolog/glm_pre_quant.h"

#define OP_NAME "glm_attention_pre_quant"

static int check(const ug_params *P, char *err, size_t errlen) { return ug_gpq_check(P, OP_NAME, err, errlen); }

const ug_op_def ug_opdef_glm_attention_pre_quant = {
    .decl.check = check, .oracle = ug_gpq_oracle, .geometry = ug_gpq_geometry, .scratch = ug_gpq_scratch};
