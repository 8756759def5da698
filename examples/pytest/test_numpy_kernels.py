"""test_numpy_kernels.py -- numpy kernels of two ulpgym ops, judged through the ulpgym pytest plugin.

    pip install ./python                                   # the package and its plugin (docs/PYTHON.md)
    pytest examples/pytest --ulpgym-op attn_softmax --ulpgym-op rms_norm_rope --ulpgym-per-op 10
    ULPGYM_EXAMPLE_BUG=1 pytest examples/pytest ...        # the planted bug: failures with triage lines

test_kernel runs once per selected case (node IDs carry the case ID) and returns the
outputs; the plugin judges them against the MPFR oracle under the op's primary standard
and records them (--ulpgym-db PATH, else pytest's cache folder), so every failure prints a
paste-ready `ulpgym triage` line.

The kernels follow each op's contract (`ulpgym ops show OP`): everything in float64 from
the inputs' exact values (bf16 bits decoded by ulpgym), each output rounded once to its
dtype with ulpgym.encode (round to nearest even), which is what "correctly rounded" asks.
Neither contract makes an intermediate rounding part of the spec: rms_norm_rope's normed
row is never rounded, fp32 attributes (scale, cap, eps) are the JSON number rounded once
to fp32. ULPGYM_EXAMPLE_BUG=1 plants a bug a device kernel could have: every row sum (the
softmax denominator, the sum of squares of the norm) accumulated in float16, one term at
a time.
"""
import os

import numpy as np
import pytest

BUG = os.environ.get("ULPGYM_EXAMPLE_BUG") == "1"


def fp32_attr(value):
    """An fp32 attribute: the JSON number rounded once to fp32, as a float64."""
    return float(np.float32(value))


def row_sum(a):
    """The sum over the last axis (kept): float64, or, the planted bug, float16 term by term."""
    if not BUG:
        return np.sum(a, axis=-1, keepdims=True)
    acc = np.add.accumulate(a.astype(np.float16), axis=-1, dtype=np.float16)
    return acc[..., -1:].astype(np.float64)


def attn_softmax(params, x, mask):
    """y = softmax(cap*tanh(x*scale/cap) + mask) over the live entries; dead rows are zeros."""
    scale, cap = fp32_attr(params["scale"]), fp32_attr(params["cap"])
    logit = x * scale
    if cap > 0:
        logit = cap * np.tanh(logit / cap)
    live = (mask != -np.inf) & (logit != -np.inf)  # a dead entry weighs 0 whatever x holds
    z = np.where(live, logit + mask, -np.inf)
    m = np.max(z, axis=-1, keepdims=True)
    dead_row = m == -np.inf
    e = np.exp(z - np.where(dead_row, 0.0, m))
    return {"y": np.where(dead_row, 0.0, e / row_sum(e))}


def norm_rope(x, gamma, cos, sin, eps):
    """Per head row: n = x*gamma/sqrt(mean(x^2) + eps), then NeoX RoPE on pairs (i, i + D/2)."""
    d = x.shape[-1]
    n = x * gamma / np.sqrt(row_sum(x * x) / d + eps)
    c, s = cos[:, None, :], sin[:, None, :]  # [t, 1, d/2] over the heads
    lo, hi = n[..., : d // 2], n[..., d // 2:]
    return np.concatenate([lo * c - hi * s, hi * c + lo * s], axis=-1)


def rms_norm_rope(params, q, k, gamma_q, gamma_k, cos, sin):
    eps = fp32_attr(params["eps"])
    return {"q_out": norm_rope(q, gamma_q, cos, sin, eps), "k_out": norm_rope(k, gamma_k, cos, sin, eps)}


KERNELS = {"attn_softmax": attn_softmax, "rms_norm_rope": rms_norm_rope}


@pytest.mark.ulpgym(op=sorted(KERNELS))
def test_kernel(ulpgym_case):
    kernel = KERNELS[ulpgym_case.op]
    with np.errstate(all="ignore"):  # NaN/inf follow IEEE rules, as the contracts say
        values = kernel(ulpgym_case.params, **ulpgym_case.input_values())
    return ulpgym_case.encode_outputs(values)  # each output rounded once (RNE) to its dtype
