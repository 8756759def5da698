#!/usr/bin/env python3
"""replay_numpy.py -- run cases exported by `ulpgym export` through your own kernels
(numpy here; PyTorch / torch_npu / CUDA in your copy) and write the outputs that
`ulpgym check` judges. The console command `ulpgym-replay-numpy` of the ulpgym package;
this file needs numpy only (not the package, not libulpgym), so a copy of it runs anywhere.

    ulpgym export --op attn_softmax --limit 20 --dir cases   # or: ulpgym export CASE_ID --dir cases
    ulpgym-replay-numpy cases                                # writes cases/<id>/outputs/*.npy
    ulpgym check --outputs cases --run my-device             # verdicts, stored like a sweep

(`python3 replay_numpy.py cases` runs a copy of this file the same way.)

Each case folder holds case.json (op, params, and for every tensor its name, dtype,
shape and file) and inputs/<name>.npy. bf16 arrives as uint16 bits and e4m3/e5m2/e8m0
as uint8 bits (case.json says "raw_bits": true); outputs go back the same way, one
outputs/<name>.npy per output listed in case.json. A case your stack cannot run gets
outputs/unsupported.txt (SKIP), one that fails gets outputs/error.txt (ERROR), each with
a one-line reason.

KERNELS maps an op name to a function (params, inputs) -> {output name: array}; inputs
arrive as float32 arrays (int8/int32 as integers) and outputs may be float32: to_device
rounds them to the output dtype (round to nearest even), as a device's store would.
With PyTorch, convert at the boundary:
    bf16 bits -> tensor:  torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    tensor -> bf16 bits:  t.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    fp8 (e4m3) likewise through torch.float8_e4m3fn and torch.uint8.
The two kernels below are plain fp32 numpy references of the operators ulpgym ships
with; `ulpgym ops show OP --json` documents every op's tensors and params.
"""
import json
import sys
import traceback
from pathlib import Path

try:
    import numpy as np
except ImportError:  # the one dependency: one line, not a traceback, when run as a script
    if __name__ != "__main__":
        raise
    print(f"{sys.argv[0]}: needs numpy, which {sys.executable} lacks (pip install numpy, "
          "or Debian: apt-get install python3-numpy)", file=sys.stderr)
    sys.exit(2)


def _fp8_table(exp_bits, man_bits, bias, fn):
    """Value of every uint8 code of an OCP fp8 format (fn: E4M3FN, no infinities)."""
    out = np.empty(256, dtype=np.float32)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        top = (1 << exp_bits) - 1
        if fn and e == top and m == (1 << man_bits) - 1:
            out[code] = np.nan
        elif not fn and e == top:
            out[code] = sign * np.inf if m == 0 else np.nan
        elif e == 0:
            out[code] = sign * m * 2.0 ** (1 - bias - man_bits)
        else:
            out[code] = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return out


_E4M3 = _fp8_table(4, 3, 7, True)
_E5M2 = _fp8_table(5, 2, 15, False)
_E8M0 = np.array([2.0 ** (b - 127) if b < 255 else np.nan for b in range(256)], dtype=np.float64)


def from_device(a, dtype):
    """A loaded input array -> values (float32; integers stay integers)."""
    if dtype == "fp32":
        return a.astype(np.float32)
    if dtype == "fp16":
        return a.astype(np.float32)
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    if dtype == "e4m3":
        return _E4M3[a]
    if dtype == "e5m2":
        return _E5M2[a]
    if dtype == "e8m0":
        return _E8M0[a].astype(np.float32)
    return a  # int8, int32


def to_device(v, dtype):
    """Values -> the array stored for an output of that dtype (rounds to nearest even)."""
    if dtype == "fp32":
        return np.asarray(v, dtype=np.float32)
    if dtype == "fp16":
        return np.asarray(v, dtype=np.float32).astype(np.float16)
    if dtype == "bf16":
        u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        nan = np.isnan(np.asarray(v, dtype=np.float32))
        return np.where(nan, np.uint16(0x7FC0), rounded).astype(np.uint16)
    if dtype == "int8":
        return np.asarray(v, dtype=np.int8)
    if dtype == "int32":
        return np.asarray(v, dtype=np.int32)
    raise NotImplementedError(f"writing {dtype} outputs: encode with torch.float8_* and view as uint8")


def attn_softmax(params, x, mask):
    scale = np.float32(params.get("scale", 1.0))
    cap = np.float32(params.get("cap", 0.0))
    z = x * scale
    if cap > 0:
        z = cap * np.tanh(z / cap)
    z = z + mask
    m = np.max(z, axis=-1, keepdims=True)
    dead = np.isneginf(m)  # fully masked rows give zeros
    e = np.exp(z - np.where(dead, np.float32(0), m))
    y = e / np.sum(e, axis=-1, keepdims=True, dtype=np.float32)
    return {"y": np.where(dead, np.float32(0), y)}


def inplace_add_rmsnorm(params, x1, x2, gamma):
    eps = np.float32(params.get("eps", 1e-6))
    xa = x1 + x2
    rstd = np.float32(1) / np.sqrt(np.mean(xa * xa, axis=-1, dtype=np.float32) + eps)
    return {"y": xa * rstd[:, None] * gamma, "x_add": xa, "rstd": rstd}


KERNELS = {"attn_softmax": attn_softmax, "inplace_add_rmsnorm": inplace_add_rmsnorm}


def run_case(folder):
    spec = json.loads((folder / "case.json").read_text())
    out_dir = folder / "outputs"
    out_dir.mkdir(exist_ok=True)
    kernel = KERNELS.get(spec["op"])
    if kernel is None:
        (out_dir / "unsupported.txt").write_text(f"no numpy kernel for {spec['op']}\n")
        return "SKIP"
    try:
        inputs = {t["name"]: from_device(np.load(folder / t["file"]), t["dtype"]) for t in spec["inputs"]}
        with np.errstate(all="ignore"):
            results = kernel(spec["params"], **inputs)
        for t in spec["outputs"]:
            arr = to_device(results[t["name"]], t["dtype"]).reshape(t["shape"])
            np.save(folder / t["file"], np.ascontiguousarray(arr))
        return "ran"
    except Exception as exc:  # the case becomes ERROR with this reason
        (out_dir / "error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
        traceback.print_exc()
        return "ERROR"


def case_folders(root):
    root = Path(root)
    if (root / "case.json").exists():
        return [root]
    if not (root / "index.json").is_file():
        raise ValueError(f"{root} has neither case.json nor index.json (write it with `ulpgym export`)")
    index = json.loads((root / "index.json").read_text())
    return [root / c["dir"] for c in index["cases"]]


def main(argv=None, prog="replay_numpy.py"):
    """Replays every case of EXPORT_DIR (argv: the arguments after the program); exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__.splitlines()[0], file=sys.stderr)
        print(f"usage: {prog} EXPORT_DIR", file=sys.stderr)
        return 2
    try:
        folders = case_folders(argv[0])
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    counts = {}
    for folder in folders:
        status = run_case(folder)
        counts[status] = counts.get(status, 0) + 1
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
