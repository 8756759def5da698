"""ulpgym.torch_refs -- reference torch implementations of the ulpgym operators torch
expresses directly, written to each op's contract (`ulpgym ops show OP`), not to torch's
defaults. ulpgym-replay-torch (replay_torch.py) loads this module unless --impl names
another one; examples/replay/ulpgym_torch_refs.py is this module under its old name.

Every kernel is `fn(case, **tensors) -> {output name: tensor}`: tensors arrive by their
case.json names on the chosen device, floating ones as float32 with --upcast
(case.compute is then torch.float32) and else in their own I/O dtype (bf16, fp16, fp32;
case.compute None), integers as int32 or int8; the driver rounds each returned tensor once
to its output dtype (round to nearest even). case.params holds every param with its
default written in (params_json), case.dtype is the case dtype as a torch dtype.

The same code is the fp32-upcast reference and the I/O-dtype one: only the dtype the
tensors arrive in differs. Where a contract mandates an intermediate rounding
(moe_grouped_gemm's bf16 activation, matmul_allreduce_add_rmsnorm's bf16 partials and,
with reduce bf16, its running sums)
the kernel rounds there in both modes (`mandated_round`); everything else stays in
case.compute. fp32 attributes (scale, eps, lr, ...) are the JSON number rounded once to
fp32 (`fp32_attr`).

Limits, stated in docs/PLUGINS.md: a NaN or infinity in v under a causal or window mask
propagates through 0*v as IEEE does (the contract ignores masked keys; the plan draws no
such values), and fp32 intermediates overflow where the exact contract does not (scores
of bf16-max q and k); the plan's distributions stay clear of both.
"""
import math

import numpy as np
import torch

NEG_INF = float("-inf")


def fp32_attr(value):
    """An fp32 attribute: the JSON number rounded once to fp32 (RNE), as a Python float."""
    return float(np.float32(value))


def mandated_round(x, dtype):
    """A rounding the contract itself makes mid-way (to dtype, RNE), kept in x's dtype."""
    return x.to(dtype).to(x.dtype)


def default_scale(value, dim):
    """A scale param whose 0 is the sentinel for 1/sqrt(dim) rounded to fp32."""
    return fp32_attr(value) if value else fp32_attr(1.0 / math.sqrt(dim))


def live_softmax(scores, live):
    """Softmax over the last dim of the live entries, and its natural-log log-sum-exp.

    A dead entry (live False, or score -inf) weighs exactly 0 whatever its score holds
    (NaN included); a row with no live entry gives p = 0 and lse = -inf; a live NaN or
    +inf score makes the row NaN (exp(inf - inf))."""
    s = scores.masked_fill(~live, NEG_INF)
    m = s.amax(dim=-1, keepdim=True)
    dead_row = m == NEG_INF
    e = torch.exp(s - m.masked_fill(dead_row, 0.0))
    total = e.sum(dim=-1, keepdim=True)
    p = (e / total).masked_fill(dead_row, 0.0)
    lse = (m + torch.log(total)).squeeze(-1)
    return p, lse


def attend(q, k, v, scale, live):
    """o = softmax(scale*q.k^T over live keys).v per head: q [H, Sq, D], k and v [H, Sk, D],
    live [Sq, Sk] (or broadcastable); returns o [H, Sq, D] and lse [H, Sq]."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    p, lse = live_softmax(scores, live.expand_as(scores))
    return torch.matmul(p.to(v.dtype), v), lse


def decode_rows_live(rows, keys, ctx_len, window, device):
    """live [rows, keys] of multi-token decode: row i of a sequence with ctx_len keys sees
    keys [max(0, E - window), E) with E = ctx_len - rows + 1 + i (window 0: no lower end)."""
    end = ctx_len - rows + 1 + torch.arange(rows, device=device)[:, None]
    j = torch.arange(keys, device=device)[None, :]
    live = j < end
    if window:
        live &= j >= end - window
    return live


def rms_scale(x, eps):
    """1/sqrt(mean(x^2) + eps) over the last dim, keeping that dim."""
    return torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)


# --- GreenLight ----------------------------------------------------------------------

def attn_softmax(case, x, mask):
    p = case.params
    scale, cap = fp32_attr(p["scale"]), fp32_attr(p["cap"])
    z = x * scale
    if cap > 0:
        z = cap * torch.tanh(z / cap)
    z = z + mask.to(z.dtype)
    y, _ = live_softmax(z, mask != NEG_INF)
    return {"y": y}


def inplace_add_rmsnorm(case, x1, x2, gamma):
    x_add = x1 + x2  # y and rstd use this unrounded sum, as the contract says
    rstd = rms_scale(x_add, fp32_attr(case.params["eps"]))
    return {"y": x_add * rstd * gamma, "x_add": x_add, "rstd": rstd.squeeze(-1)}


def rope_split_half(n, cos, sin):
    """NeoX rotation of pairs (i, i + D/2): cos/sin broadcast over n's half rows."""
    half = n.shape[-1] // 2
    a, b = n[..., :half], n[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def rms_norm_rope(case, q, k, gamma_q, gamma_k, cos, sin):
    eps = fp32_attr(case.params["eps"])
    cos, sin = cos[:, None, :], sin[:, None, :]  # [t, 1, d/2] over the heads
    q_n = q * gamma_q * rms_scale(q, eps)
    k_n = k * gamma_k * rms_scale(k, eps)
    return {"q_out": rope_split_half(q_n, cos, sin), "k_out": rope_split_half(k_n, cos, sin)}


def interleave_rope(case, x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    half = x.shape[-1] // 2
    if case.params["tables"] == "given":  # [B, 1, cs_s, D]: halves independent, cs_s broadcasts over S
        c1, c2, s1, s2 = cos[..., :half], cos[..., half:], sin[..., :half], sin[..., half:]
    else:  # [S, D/2] serving both halves
        c1 = c2 = cos
        s1 = s2 = sin
    return {"y": torch.cat([even * c1 - odd * s1, odd * c2 + even * s2], dim=-1)}


def mhc_post(case, x, h_out, h_res, h_post):
    mixed = torch.einsum("tkn,tkd->tnd", h_res.to(x.dtype), x)
    return {"out": h_post.to(x.dtype)[:, :, None] * h_out[:, None, :] + mixed}


def apply_adamw(case, w, g, m, v):
    p = case.params
    lr, b1, b2 = fp32_attr(p["lr"]), fp32_attr(p["beta1"]), fp32_attr(p["beta2"])
    eps, wd, step = fp32_attr(p["eps"]), fp32_attr(p["weight_decay"]), int(p["step"])
    bias1 = 1.0 - b1 ** step  # in double from the fp32 betas, as the contract says
    bias2 = 1.0 - b2 ** step
    m_out = b1 * m + (1.0 - b1) * g
    v_out = b2 * v + (1.0 - b2) * (g * g)
    update = (m_out / bias1) / (torch.sqrt(v_out / bias2) + eps) + wd * w
    return {"w_out": w - lr * update, "m_out": m_out, "v_out": v_out}


def gqa_decode_attn(case, q, k, v, seq_lens):
    p = case.params
    group, steps, window = int(p["group"]), int(p["q_per_step"]), int(p["window"])
    scale = fp32_attr(p["scale"])
    o = torch.empty_like(q)
    for b, ctx_len in enumerate(seq_lens.tolist()):
        rows = q[b * steps:(b + 1) * steps].transpose(0, 1)  # [Hq, S_q, D]
        keys = k[b, :, :ctx_len].repeat_interleave(group, dim=0)  # [Hq, L, D]
        vals = v[b, :, :ctx_len].repeat_interleave(group, dim=0)
        live = decode_rows_live(steps, ctx_len, ctx_len, window, q.device)
        o_b, _ = attend(rows, keys, vals, scale, live)
        o[b * steps:(b + 1) * steps] = o_b.transpose(0, 1)
    return {"o": o}


def moe_grouped_gemm(case, x, w1, w3, w2, group_list):
    out = torch.zeros_like(x)
    start = 0
    for e, count in enumerate(group_list.tolist()):
        if count == 0:
            continue
        rows = x[start:start + count]
        act = torch.nn.functional.silu(rows @ w1[e]) * (rows @ w3[e])
        out[start:start + count] = mandated_round(act, case.dtype) @ w2[e]  # the device writes a back in bf16
        start += count
    return {"out": out}


def gated_delta_rule(case, q, k, v, g, beta, h0):
    """The recurrence token by token: s = e^g s + beta (v - e^g s.k) k^T, o = scale * s.q."""
    p = case.params
    scale = fp32_attr(p["scale"])
    share = v.shape[1] // q.shape[1]  # value heads per qk head
    if p["qk_norm"] == "l2":
        eps = fp32_attr(p["qk_eps"])
        q = q * torch.rsqrt((q * q).sum(dim=-1, keepdim=True) + eps)
        k = k * torch.rsqrt((k * k).sum(dim=-1, keepdim=True) + eps)
    state = h0.to(torch.promote_types(h0.dtype, v.dtype))  # [Hv, Dv, Dk]
    o = torch.empty(v.shape, dtype=state.dtype, device=v.device)
    for t in range(q.shape[0]):
        k_t = k[t].repeat_interleave(share, dim=0).to(state.dtype)  # [Hv, Dk]
        q_t = q[t].repeat_interleave(share, dim=0).to(state.dtype)
        state = torch.exp(g[t]).to(state.dtype)[:, None, None] * state
        erase = v[t].to(state.dtype) - torch.einsum("hik,hk->hi", state, k_t)
        state = state + beta[t].to(state.dtype)[:, None, None] * erase[:, :, None] * k_t[:, None, :]
        o[t] = scale * torch.einsum("hik,hk->hi", state, q_t)
    return {"o": o, "ht": state}


# --- Operator --------------------------------------------------------------------------

def varlen_attention(case, q, k, v, cu_seqlens_q, cu_seqlens_k):
    """flash_attention_mha's forward: per batch element, heads first; returns o, lse."""
    p = case.params
    scale = default_scale(p["scale"], q.shape[-1])
    o = torch.zeros_like(q)
    lse = torch.full(q.shape[:2], NEG_INF, dtype=torch.float32, device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        lq, lk = cq[b + 1] - cq[b], ck[b + 1] - ck[b]
        if lq == 0 or lk == 0:
            continue  # no key: o = 0, lse = -inf
        live = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
        if int(p["causal"]):  # bottom-right aligned: i sees j <= i + lk - lq
            live = torch.tril(live, diagonal=lk - lq)
        o_b, lse_b = attend(q[cq[b]:cq[b + 1]].transpose(0, 1), k[ck[b]:ck[b + 1]].transpose(0, 1),
                            v[ck[b]:ck[b + 1]].transpose(0, 1), scale, live)
        o[cq[b]:cq[b + 1]] = o_b.transpose(0, 1)
        lse[cq[b]:cq[b + 1]] = lse_b.transpose(0, 1).float()
    return o, lse


def flash_attention_mha(case, q, k, v, cu_seqlens_q, cu_seqlens_k):
    o, lse = varlen_attention(case, q, k, v, cu_seqlens_q, cu_seqlens_k)
    return {"o": o, "lse": lse}


def flash_attention_mha_grad(case, q, k, v, cu_seqlens_q, cu_seqlens_k, do, o, lse):
    """The backward of the forward above by autograd, per batch element, from q, k, v and do
    (the o and lse inputs are not read, as in the contract)."""
    scale = default_scale(case.params["scale"], q.shape[-1])
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        lq, lk = cq[b + 1] - cq[b], ck[b + 1] - ck[b]
        if lq == 0 or lk == 0:
            continue  # no terms: zero gradients
        live = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
        if int(case.params["causal"]):
            live = torch.tril(live, diagonal=lk - lq)
        with torch.enable_grad():
            leaves = [t[lo:hi].transpose(0, 1).detach().requires_grad_()
                      for t, lo, hi in ((q, cq[b], cq[b + 1]), (k, ck[b], ck[b + 1]), (v, ck[b], ck[b + 1]))]
            o_b, _ = attend(*leaves, scale, live)
            grads = torch.autograd.grad(o_b, leaves, do[cq[b]:cq[b + 1]].transpose(0, 1))
        dq[cq[b]:cq[b + 1]], dk[ck[b]:ck[b + 1]], dv[ck[b]:ck[b + 1]] = (g.transpose(0, 1) for g in grads)
    return {"dq": dq, "dk": dk, "dv": dv}


def page_attention(case, q, key_cache, value_cache, block_tables, context_lens):
    p = case.params
    group, steps, block = int(p["group"]), int(p["q_per_step"]), int(p["block_size"])
    scale = default_scale(p["scale"], q.shape[-1])
    o = torch.empty_like(q)
    for b, ctx_len in enumerate(context_lens.tolist()):
        blocks = block_tables[b, :-(-ctx_len // block)].long()
        keys = key_cache[blocks].flatten(0, 1)[:ctx_len].transpose(0, 1)  # [Hkv, L, D]
        vals = value_cache[blocks].flatten(0, 1)[:ctx_len].transpose(0, 1)
        rows = q[b * steps:(b + 1) * steps].transpose(0, 1)
        live = decode_rows_live(steps, ctx_len, ctx_len, 0, q.device)
        o_b, _ = attend(rows, keys.repeat_interleave(group, dim=0), vals.repeat_interleave(group, dim=0), scale, live)
        o[b * steps:(b + 1) * steps] = o_b.transpose(0, 1)
    return {"o": o}


def matmul_allreduce_add_rmsnorm(case, x, w, residual, gamma):
    partials = mandated_round(torch.matmul(x, w), case.dtype)  # [W, T, N]: bf16 on the wire
    reduced = partials[0]
    for rank_partial in partials[1:]:  # the all-reduce, in rank order
        reduced = reduced + rank_partial
        if case.params.get("reduce") == "bf16":  # the reference suite's bf16 all-reduce
            reduced = mandated_round(reduced, case.dtype)
    h = reduced + residual  # out normalises this h, not the stored bf16 one
    return {"h": h, "out": h * rms_scale(h, fp32_attr(case.params["eps"])) * gamma, "partials": partials}


# --- GLM -----------------------------------------------------------------------------

def glm_gate(case, x, w):
    return {"logits": torch.matmul(x.to(w.dtype), w.transpose(0, 1))}


KERNELS = {
    "attn_softmax": attn_softmax,
    "inplace_add_rmsnorm": inplace_add_rmsnorm,
    "rms_norm_rope": rms_norm_rope,
    "interleave_rope": interleave_rope,
    "mhc_post": mhc_post,
    "apply_adamw": apply_adamw,
    "gqa_decode_attn": gqa_decode_attn,
    "moe_grouped_gemm": moe_grouped_gemm,
    "gated_delta_rule": gated_delta_rule,
    "flash_attention_mha": flash_attention_mha,
    "flash_attention_mha_grad": flash_attention_mha_grad,
    "page_attention": page_attention,
    "matmul_allreduce_add_rmsnorm": matmul_allreduce_add_rmsnorm,
    "glm_gate": glm_gate,
}
