/* glm_attention_pre_quant.c — sim kernel and planted-bug mutants of
 * glm_attention_pre_quant, the GLM-4.5 attention prolog (r = x + residual, input norm
 * with bias, static int8 quant, int8 GEMM + int32 bias, q/k head norms, partial RoPE).
 * The device computation of one token is kernels/sim/prolog/glm_pre_quant.c (shared with
 * glm_attention_fusion), and so is the walk over the tokens that binds the tensors and
 * stores every exported stage (ug_gpq_kernel); this file names the mutants.
 *
 * Mutants, bug classes of a hand-written quantised prolog: round half away from zero in
 * the quantiser (differs from rint only on exact .5 ties: the ties cases), an int8 cast
 * that wraps instead of saturating (codes beyond +-127), the int32 bias added after the
 * dequant scale, GPT-J interleaved RoPE pairs instead of rotate-half, q/k head norms
 * without their bias, and fp32 squares without pre-scaling (overflow only for the
 * near-overflow inputs, |r| above ~1.8e19).
 *
 * Legal variants: the norms' fp32 sums of squares (the input norm over hidden, each head
 * norm over head_dim) as one sequential fmaf chain (legal_seq_fma) or in tiles of 64 with
 * the partials summed pairwise (legal_tile64): the certified device model's sums in any
 * order; everything else is exact or one correctly rounded fp32 operation. */
#include "core/ops.h"
#include "kernels/sim/prolog/glm_pre_quant.h"

static int pq_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    return ug_gpq_kernel(call, err, errlen, bug, NULL, NULL);
}

const ug_kernel_fn ug_sim_glm_attention_pre_quant = pq_kernel;
