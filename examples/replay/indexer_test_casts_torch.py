"""indexer_test_casts_torch.py -- lightning_indexer_prolog_quant as the reference suite's
test computes its golden (hicann/pypto-gym tests/ops/deepseek_v32_exp/
test_lightning_indexer_prolog_quant.py), in torch: the casts to bf16 its kernel's matmuls
and vector stages make, which ulpgym's contract keeps exact. An --impl module for
replay_torch.py; it shows that `reference` accepts a kernel that rounds where the test
rounds (the op's reference goldens), while the exact value alone would fail it:

    ulpgym export b60d045cec6ed0b6 --plan reference --dir case
    python3 replay_torch.py case case --impl indexer_test_casts_torch.py
    ulpgym check b60d045cec6ed0b6 --outputs case

Our own code from the test's formulas: q = bf16(fp32(q_norm.w_qb) * q_norm_scale *
w_qb_scale), k = bf16(LayerNorm(fp32 x.W_k)), each through RoPE (fp32, bf16) and the dense
Hadamard (fp32, bf16), DynQuant with r = 127/amax, codes rint(v*r), scale 1/r in fp16;
weights = fp16(bf16(x.W_proj) * H^-1/2 * D^-1/2). Needs the test's pipeline: params
hadamard given, tables given, k_norm layernorm. Inputs arrive in their I/O dtypes (run
without --upcast).
"""
import numpy as np
import torch


def _rope(v, cos, sin):
    """x*cos + rotate_half(x)*sin on the first R dims in fp32, the rest passed, all bf16."""
    r = cos.shape[-1]
    a = v[..., :r].float()
    half = r // 2
    rot = torch.cat((-a[..., half:], a[..., :half]), dim=-1)
    out = (a * cos.float() + rot * sin.float()).bfloat16()
    return torch.cat((out, v[..., r:]), dim=-1)


def _quant(v):
    """The test's per-row quant_int8: codes rint(v * 127/amax) and the scale 1/r in fp16."""
    v32 = v.float()
    r = 127.0 / v32.abs().amax(dim=-1, keepdim=True)
    codes = torch.round(v32 * r).to(torch.int32).to(torch.bfloat16).trunc().to(torch.int8)
    return codes, (1.0 / r).squeeze(-1).half()


def lightning_indexer_prolog_quant(case, q_norm, q_norm_scale, w_qb, w_qb_scale, x, w_k, ln_gamma, ln_beta,
                                   w_proj, cos, sin, slot_mapping, hadamard_q, hadamard_k):
    p = case.params
    if p["hadamard"] != "given" or p["tables"] != "given" or p["k_norm"] != "layernorm":
        raise NotImplementedError("the reference test's pipeline only: hadamard given, tables given, k_norm layernorm")
    t, h, d = x.shape[0], p["heads"], p["d"]
    dot = torch.matmul(q_norm.double(), w_qb.double())  # the int32 matmul, exact in double
    q = (dot.float() * q_norm_scale.float()[:, None] * w_qb_scale.float()[None, :]).bfloat16().view(t, h, d)
    q = _rope(q, cos[:, None, :], sin[:, None, :])
    q = torch.matmul(q.float(), hadamard_q.float()).bfloat16()
    q_i8, q_scale = _quant(q)

    k = torch.matmul(x.float(), w_k.float())
    mean = k.mean(dim=-1, keepdim=True)
    var = ((k - mean) ** 2).mean(dim=-1, keepdim=True)
    k = ((k - mean) / torch.sqrt(var + float(np.float32(p["eps"]))) * ln_gamma.float() + ln_beta.float()).bfloat16()
    k = torch.matmul(_rope(k, cos, sin).float(), hadamard_k.float()).bfloat16()
    k_i8, k_scale = _quant(k)
    k_cache = torch.zeros(p["blocks"] * p["block_size"], d, dtype=torch.int8)
    k_scales = torch.zeros(p["blocks"] * p["block_size"], dtype=torch.float16)
    for tok, slot in enumerate(slot_mapping.tolist()):
        if slot >= 0:  # a padding token (slot -1) writes nothing
            k_cache[slot], k_scales[slot] = k_i8[tok], k_scale[tok]

    weights = (torch.matmul(x.float(), w_proj.float()).bfloat16().float() * h ** -0.5 * d ** -0.5).half()
    return {"q_i8": q_i8, "q_scale": q_scale, "k_cache": k_cache, "k_scale": k_scales, "weights": weights}


KERNELS = {"lightning_indexer_prolog_quant": lightning_indexer_prolog_quant}
