/* indexer_prolog_fp8.h — check, builder, oracle and geometry shared by the lightning
 * indexer prologs lightning_indexer_prolog_quant (int8), _fp8 and _mxfp8. They differ in
 * the quantisation format, which is the op's identity (ug_lip_format_of(c->def->op)), and
 * the int8 op computes q from q_norm.w_qb where the fp8 ops take a dequantised bf16 q.
 * Outputs are found by name: q codes (q_fp8 / q_i8), q_scale, k_cache, k_scale, weights
 * and the views <codes>@oracle_scale. */
#ifndef UG_ORACLE_INDEXER_PROLOG_FP8_H
#define UG_ORACLE_INDEXER_PROLOG_FP8_H
#include "core/registry.h"
#include "oracles/oracle.h"

/* The params both ops declare, their cross-param check, and each op's tensors (same
 * inputs; the scale outputs differ in dtype and shape). */
int ug_lip8_check(const ug_params *p, char *err, size_t errlen);
/* Scratch for the case memory estimate (ug_op_def.scratch). */
double ug_lip8_scratch(const ug_params *p);
/* The sim kernel's token block (x rows and their products) for hidden hid, H heads of D,
 * and with L > 0 (int8) its packed w_qb [L, H*D] and the block's int32 q dots, in bytes. */
double ug_lip8_kernel_block_bytes(double hid, double H, double D, double L);

typedef enum { UG_LIP_FP8, UG_LIP_MX, UG_LIP_INT8 } ug_lip_format;
ug_lip_format ug_lip_format_of(ug_op op);

int ug_lip8_build(ug_case *c, char *err, size_t errlen);
int ug_lip8_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);
void ug_lip8_geometry(const ug_case *c, int out, ug_geom *g);
/* The int8 indexer's reference golden of weights (core/ops.h reference_golden): its tests'
 * _indexer_compute_weights, our fp32 evaluation of it: the fp32 product x.W_proj cast to
 * bf16 (x's dtype) and back, times fp32(H^-1/2), times fp32(D^-1/2), cast to fp16, for the
 * selected elements of judged output "weights" (none without out[k]). The params naming
 * hidden, H and D differ between the ops that hold the indexer. */
void ug_lip_weights_golden(const ug_case *c, const ug_selection *sel, double **out, const char *hidden,
                           const char *heads, const char *d);

/* Per-token oracle for a fused op (mla_indexer_prolog_quant) that holds these outputs among
 * its own: open with the format and the judged-output names (NULL: the op's own), call
 * ug_lip_token for each token t in order (it emits the selected q rows, weights and the k
 * row of t's slot), then ug_lip_close (it emits the unwritten cache slots and frees). The
 * case must hold this pipeline's inputs under their names here (x, w_k, ln_gamma, ln_beta,
 * w_proj, cos, sin, slot_mapping, hadamard_q/k when given; q, or int8's q_norm,
 * q_norm_scale, w_qb, w_qb_scale) and its params (tokens, hidden, heads, d, rope, blocks,
 * block_size, pad, pos, eps, rope_base, k_norm, tables, hadamard). A name the case does
 * not judge is skipped. */
typedef struct {
    const char *q_codes, *q_scale, *k_cache, *k_scale, *weights, *q_view, *k_view;
} ug_lip_names;
typedef struct ug_lip_ctx ug_lip_ctx;
ug_lip_ctx *ug_lip_open(const ug_case *c, ug_lip_format fmt, const ug_lip_names *names); /* NULL: no memory */

/* The params the pipeline reads (ug_lip_open reads them from the case by the names above). */
typedef struct {
    long tokens, hidden, heads, d, rope, blocks, block_size, pad, pos;
    double eps, base;   /* eps: fp32 value */
    int rms;            /* k_norm rmsnorm: no mean subtraction, no beta */
    int given_tables;   /* tables given: cos/sin [T, R], column i+R/2 for the second half */
    int given_hadamard; /* hadamard given: dense hadamard_q / hadamard_k inputs */
} ug_lip_params;
/* The pipeline's params read from the case by their own names (tokens, hidden, heads, ...). */
void ug_lip_params_read(const ug_case *c, ug_lip_params *p);

/* The int8 indexer's reference goldens of q_scale and k_scale: its tests' _indexer_compute_q
 * and _indexer_compute_k, our fp32 evaluation (indexer_prolog_golden.c): q = bf16(fp32(int32
 * dot) * q_norm_scale * w_qb_scale), k = bf16(LayerNorm(fp32 x.W_k)), each through RoPE in
 * fp32 then bf16 and the dense Hadamard in fp32 then bf16, amax of that bf16 row, r =
 * 127/amax and 1/r in fp32, fp16. Only for the tests' pipeline (hadamard given, k_norm
 * layernorm); elsewhere, at slots no token writes and where the scale is not finite, NaN
 * (no golden). Fills the judged outputs "q_scale" and "k_scale" whose out[k] is set. p: the
 * pipeline's params (NULL: read from the case by their own names); q_norm, q_norm_scale: a
 * fused op's own outputs the q rows start from (the kernel's codes and scale, as its oracle
 * stages them), NULL: the inputs of those names. */
void ug_lip_scales_golden(const ug_case *c, const ug_selection *sel, double **out, const ug_lip_params *p,
                          const ug_tensor *q_norm, const ug_tensor *q_norm_scale);

/* ug_lip_open for a fused op whose param names differ: p (NULL: read by name as above) and,
 * int8, the q source q_norm [T, L] / q_norm_scale [T] taken from the caller's tensors (the
 * fused op's own outputs: the kernel's exported codes and scale, the staged rule; NULL:
 * the inputs of those names). */
ug_lip_ctx *ug_lip_open_ex(const ug_case *c, ug_lip_format fmt, const ug_lip_names *names, const ug_lip_params *p,
                           const ug_tensor *q_norm, const ug_tensor *q_norm_scale);
void ug_lip_token(ug_lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t);
void ug_lip_close(ug_lip_ctx *k, ug_ar *ar, const ug_selection *sel);

/* The semantics text both ops state, with the format's scale rule spliced in. */
#define UG_LIP8_SEMANTICS(SCALE)                                                                                       \
    "Exact arithmetic on the bf16 inputs and the fp32 value of eps up to the quantisation: RoPE_half with the bf16 "   \
    "cos/sin tables, LayerNorm (mean, variance, 1/sqrt(var + eps)) and the normalised Hadamard H_D v / sqrt(D) are "   \
    "not rounded (k_norm rmsnorm: v/sqrt(mean(v^2) + eps)*gamma, no mean, beta unread). " SCALE                        \
    " Codes are e4m3(v/scale), RNE, saturating to +-448; an all-zero block has codes 0. A "                            \
    "quantisation block holding a NaN or +-inf value (a NaN or inf input reaches every element of its row through "    \
    "the Hadamard; an inf in x or a LayerNorm weight poisons the whole k row) has a NaN scale and NaN codes. "         \
    "weights = (x.W_proj)/sqrt(H*D), rounded once to bf16; IEEE special values propagate through it. A padding "       \
    "token (slot -1) writes nothing. Finite inputs never overflow before the quantisation in the oracle: with "        \
    "bf16-max q or huge x the exact Hadamard and LayerNorm stay finite, so a kernel whose fp32 butterfly, GEMM or "    \
    "variance overflows fails there."
#endif
