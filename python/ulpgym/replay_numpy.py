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
import os
import re
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

# --- files: an export folder may come from another machine. Tensors are found by their
# name (inputs/<name>.npy, outputs/<name>.npy), never by a path case.json gives, and
# nothing is written through a symbolic link. ---

_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")


class CaseFolderError(Exception):
    """A case folder that cannot be replayed; it is named and the other cases still run."""


def tensor_name(t):
    """A tensor entry's name, refused unless a plain identifier (no path can hide in it)."""
    name = t.get("name") if isinstance(t, dict) else None
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CaseFolderError(f"case.json names a tensor {name!r}: not a plain name")
    return name


def open_new(path, mode="wb"):
    """path opened for writing, created or truncated, refused (OSError) when it is a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    return os.fdopen(fd, mode)


def write_text(path, text):
    with open_new(path, "w") as f:
        f.write(text)


def save_npy(path, array):
    with open_new(path) as f:
        np.save(f, np.ascontiguousarray(array))


def outputs_folder(folder):
    """folder/outputs, created; refused when it (or folder) is a link or not a folder."""
    out = Path(folder) / "outputs"
    for p in (Path(folder), out):
        if p.is_symlink():
            raise CaseFolderError(f"{p} is a symbolic link: nothing is written through one")
    out.mkdir(exist_ok=True)
    if not out.is_dir():
        raise CaseFolderError(f"{out} is not a folder")
    return out


def read_case(folder):
    """folder/case.json as a dict with op, params, inputs and outputs; CaseFolderError otherwise."""
    path = Path(folder) / "case.json"
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CaseFolderError(f"{path}: {exc}") from None
    if not isinstance(spec, dict) or not all(isinstance(spec.get(k), t) for k, t in
                                             (("op", str), ("params", dict), ("inputs", list), ("outputs", list))):
        raise CaseFolderError(f"{path}: not a ulpgym case (op, params, inputs, outputs)")
    return spec


def run_case(folder):
    spec = read_case(folder)
    out_dir = outputs_folder(folder)
    names = [tensor_name(t) for t in spec["inputs"] + spec["outputs"]]
    for stale in [f"{n}.npy" for n in names] + ["unsupported.txt", "error.txt"]:
        if (out_dir / stale).is_symlink() or (out_dir / stale).exists():
            (out_dir / stale).unlink()
    kernel = KERNELS.get(spec["op"])
    if kernel is None:
        write_text(out_dir / "unsupported.txt", f"no numpy kernel for {spec['op']}\n")
        return "SKIP"
    try:
        inputs = {tensor_name(t): from_device(np.load(Path(folder) / "inputs" / f"{tensor_name(t)}.npy"), t["dtype"])
                  for t in spec["inputs"]}
        with np.errstate(all="ignore"):
            results = kernel(spec["params"], **inputs)
        for t in spec["outputs"]:
            arr = to_device(results[t["name"]], t["dtype"]).reshape(t["shape"])
            save_npy(out_dir / f"{tensor_name(t)}.npy", arr)
        return "ran"
    except Exception as exc:  # the case becomes ERROR with this reason
        write_text(out_dir / "error.txt", f"{type(exc).__name__}: {exc}\n")
        traceback.print_exc()
        return "ERROR"


def index_entries(root):
    """The case folders an export lists: [(dir name, error or None)]; ValueError when the
    export itself cannot be read (one clear line, no traceback)."""
    root = Path(root)
    if (root / "case.json").exists():
        return [(".", None)]
    index_path = root / "index.json"
    if not index_path.is_file():
        raise ValueError(f"{root} has neither case.json nor index.json (write it with `ulpgym export`)")
    try:
        index = json.loads(index_path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{index_path}: not valid JSON ({exc})") from None
    cases = index.get("cases") if isinstance(index, dict) else None
    if not isinstance(cases, list):
        raise ValueError(f"{index_path}: no \"cases\" list")
    entries = []
    for i, c in enumerate(cases):
        d = c.get("dir") if isinstance(c, dict) else None
        plain = isinstance(d, str) and _NAME.fullmatch(d) is not None
        entries.append((d if plain else f"cases[{i}]", None if plain else f"cases[{i}]: \"dir\" {d!r} is not a plain name"))
    return entries


def main(argv=None, prog="replay_numpy.py"):
    """Replays every case of EXPORT_DIR (argv: the arguments after the program); exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__.splitlines()[0], file=sys.stderr)
        print(f"usage: {prog} EXPORT_DIR", file=sys.stderr)
        return 2
    try:
        entries = index_entries(argv[0])
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    counts = {}
    for d, error in entries:
        try:
            if error:
                raise CaseFolderError(error)
            status = run_case(Path(argv[0]) / d)
        except (CaseFolderError, OSError) as exc:  # this case is not replayed; the others are
            print(f"{prog}: case {d}: {exc}", file=sys.stderr)
            status = "refused"
        counts[status] = counts.get(status, 0) + 1
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if counts.get("refused") else 0


if __name__ == "__main__":
    sys.exit(main())
