#!/usr/bin/env python3
"""replay_torch.py -- run cases exported by `ulpgym export` through torch kernels (CPU,
CUDA or torch_npu) and write the outputs `ulpgym check` judges. The console command
`ulpgym-replay-torch` of the ulpgym package (examples/replay/replay_torch.py runs it from
a source tree); it needs numpy and torch, not libulpgym.

    ulpgym export --op attn_softmax --per-op 20 --dir cases
    ulpgym-replay-torch cases out --upcast               # the shipped fp32-upcast references
    ulpgym-replay-torch cases out --impl my_kernels --device npu
    ulpgym check --outputs out --run my-device           # verdicts, stored like a sweep

usage: ulpgym-replay-torch EXPORT_DIR OUT_DIR [--impl MODULE] [--upcast] [--device cpu|cuda|npu] [--op OP]...

EXPORT_DIR is a plan export (index.json) or one case folder (case.json). OUT_DIR gets
the same layout: each case's case.json and outputs/<name>.npy (index.json copied), so one
export can be replayed by several implementations; OUT_DIR may be EXPORT_DIR itself.

--impl MODULE   a module name on sys.path (the current directory is added, and
                examples/replay when run through its script) or a path to a .py file,
                holding KERNELS = {op: fn}; default ulpgym.torch_refs, the contract
                references (examples/replay/ulpgym_torch_refs.py is the same module). A
                case whose op has no kernel there is SKIP (outputs/unsupported.txt) and
                the summary names the op.
--upcast        floating inputs arrive as float32 (else in their I/O dtype: bf16, fp16).
--device        where tensors live: cpu (default), cuda, npu (imports torch_npu).
--op OP         replay only the cases of OP (repeatable).

fn(case, **tensors) returns {output name: tensor}; the driver rounds each once (RNE) to
its output dtype and writes it. An exception makes the case ERROR (outputs/error.txt with
the message); torch's "not implemented for 'Half'" (CPU fp16 kernels of torch 1.x) makes
it SKIP. Exit status: 0 every case ran or was skipped, 1 some case is ERROR, 2 bad usage
(nothing written), also when numpy or torch is missing. No network is used.
"""
import argparse
import importlib
import importlib.util
import json
import sys
import traceback
from pathlib import Path

import numpy as np

import torch  # the entry points (ulpgym._cli) check for numpy and torch before importing this

from .replay_numpy import (CaseFolderError, index_entries, open_new, outputs_folder, read_case, save_npy,
                           tensor_name, write_text)

# case.json dtype -> (torch dtype, numpy dtype of the stored array when raw bits travel)
TORCH_DTYPES = {
    "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
    "int32": torch.int32, "int8": torch.int8,
}
RAW_BITS = {"bf16": (np.int16, np.uint16)}  # bits as numpy holds them, viewed through torch's signed type
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


class UsageError(Exception):
    """Bad command line or environment: one line on stderr, exit 2."""


class Case:
    """What a kernel learns about its case besides the tensors."""

    def __init__(self, spec, compute, device):
        self.op = spec["op"]
        self.id = spec["case_id"]
        self.params = json.loads(spec["params_json"])  # every default written in
        self.dtype = TORCH_DTYPES[spec["dtype"]]
        self.compute = compute
        self.device = device


def load_input(path, dtype, compute, device):
    """An input .npy -> a tensor on device; floating inputs in `compute` when it is float32."""
    array = np.load(path)
    if dtype in RAW_BITS:
        signed, _ = RAW_BITS[dtype]
        t = torch.from_numpy(array.view(signed)).view(TORCH_DTYPES[dtype])
    elif dtype in TORCH_DTYPES:
        t = torch.from_numpy(array)
    else:
        raise NotImplementedError(f"{dtype} inputs: this driver decodes fp32, fp16, bf16, int32 and int8")
    t = t.to(device)
    return t.float() if compute == torch.float32 and t.dtype in FLOATS else t


def store_output(t, spec_out, path):
    """Rounds a result once to its output dtype (RNE) and writes it as case.json says."""
    dtype, shape = spec_out["dtype"], spec_out["shape"]
    if dtype not in TORCH_DTYPES:
        raise NotImplementedError(f"writing {dtype} outputs (encode fp8 codes as uint8 bits yourself)")
    t = torch.as_tensor(t)
    if t.numel() != int(np.prod(shape)):
        raise ValueError(f"output {spec_out['name']} has {tuple(t.shape)}, the contract says {shape}")
    t = t.detach().to(TORCH_DTYPES[dtype]).reshape(shape).contiguous().cpu()
    if dtype in RAW_BITS:
        signed, unsigned = RAW_BITS[dtype]
        array = t.view(torch.int16).numpy().view(unsigned)
    else:
        array = t.numpy()
    save_npy(path, array)


def unsupported_by_torch(exc):
    """torch has no kernel for this dtype on this device (fp16 matmul on CPU, ...)."""
    return isinstance(exc, NotImplementedError) or (isinstance(exc, RuntimeError) and "not implemented for" in str(exc))


def run_case(src, dst, kernels, impl_name, compute, device):
    """Replays one case folder src into dst; returns ran, SKIP or ERROR."""
    spec = read_case(src)
    for t in spec["inputs"] + spec["outputs"]:
        tensor_name(t)  # plain names only: files are found by name, never by a path case.json gives
    if dst.resolve() != src.resolve():
        if dst.is_symlink():
            raise CaseFolderError(f"{dst} is a symbolic link: nothing is written through one")
        dst.mkdir(parents=True, exist_ok=True)
        with open_new(dst / "case.json", "w") as f:
            f.write((src / "case.json").read_text())
    out_dir = outputs_folder(dst)
    for stale in out_dir.iterdir():  # no stale outputs from an earlier replay (a link is removed, not followed)
        stale.unlink()
    kernel = kernels.get(spec["op"])
    if kernel is None:
        write_text(out_dir / "unsupported.txt", f"no torch implementation of {spec['op']} in {impl_name}\n")
        return "SKIP"
    try:
        inputs = {t["name"]: load_input(src / "inputs" / f"{t['name']}.npy", t["dtype"], compute, device)
                  for t in spec["inputs"]}
        with torch.no_grad():
            results = kernel(Case(spec, compute, device), **inputs)
        for t in spec["outputs"]:
            if t.get("optional") and t["name"] not in results:
                continue  # an optional output the reference does not compute: no file, judged NA
            store_output(results[t["name"]], t, out_dir / f"{t['name']}.npy")
        return "ran"
    except Exception as exc:  # the case becomes SKIP or ERROR with this reason, the replay goes on
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        for stale in out_dir.iterdir():
            stale.unlink()
        if unsupported_by_torch(exc):
            write_text(out_dir / "unsupported.txt", f"torch on {device}: {reason}\n")
            return "SKIP"
        write_text(out_dir / "error.txt", reason + "\n")
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"case {spec['case_id']} ({spec['op']}): ERROR {reason} ({Path(where.filename).name}:{where.lineno})",
              file=sys.stderr)
        return "ERROR"


DEFAULT_IMPL = "ulpgym.torch_refs"


def load_kernels(impl, search=()):
    """KERNELS of a module name or a .py path (module names looked up in the folders of
    search and the current directory first); UsageError when it cannot be had."""
    for folder in [str(f) for f in search] + ["."]:
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        if impl.endswith(".py") or "/" in impl:
            path = Path(impl)
            if not path.is_file():
                raise UsageError(f"--impl {impl}: no such file")
            loader = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(impl)
    except ImportError as exc:
        raise UsageError(f"--impl {impl}: cannot import it ({exc})") from exc
    kernels = getattr(module, "KERNELS", None)
    if not isinstance(kernels, dict):
        raise UsageError(f"--impl {impl}: the module has no KERNELS dict (op name -> function)")
    return kernels


def open_device(name):
    """The torch device for --device; UsageError when this machine lacks it."""
    if name == "npu":
        try:
            importlib.import_module("torch_npu")  # registers the npu device with torch
        except ImportError as exc:
            raise UsageError(f"--device npu: torch_npu is not installed ({exc})") from exc
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device here")
    return torch.device(name)


def select_cases(root, ops):
    """The index of an export (a lone case folder becomes a one-case index), only OP's cases
    when --op names some."""
    if (root / "case.json").is_file():
        try:
            spec = read_case(root)
        except CaseFolderError as exc:
            raise UsageError(str(exc)) from None
        return {"cases": [{"case_id": spec.get("case_id", ""), "op": spec["op"], "dir": "."}]}
    try:
        entries = index_entries(root)  # checks index.json: readable, a "cases" list
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    index = json.loads((root / "index.json").read_text())
    cases = []
    for (d, error), c in zip(entries, index["cases"]):
        op = c.get("op") if isinstance(c, dict) else None
        if error is None and (not ops or op in ops):
            cases.append({"case_id": c.get("case_id", ""), "op": op, "dir": d})
        elif error is not None:
            cases.append({"case_id": "", "op": op, "dir": d, "error": error})
    index["cases"] = cases
    return index


def parse_args(argv, prog):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--impl", default=DEFAULT_IMPL)
    parser.add_argument("--upcast", action="store_true")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "npu"])
    parser.add_argument("--op", action="append", default=[])
    return parser.parse_args(argv)


def main(argv=None, prog="ulpgym-replay-torch", search=()):
    """The driver (argv: the arguments after the program); returns the exit status."""
    args = parse_args(sys.argv[1:] if argv is None else argv, prog)
    try:
        kernels = load_kernels(args.impl, search)
        device = open_device(args.device)
        index = select_cases(args.export_dir, set(args.op))
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    in_place = args.out_dir.resolve() == args.export_dir.resolve()
    if not in_place and (args.export_dir / "index.json").is_file():  # the cases replayed here, for `ulpgym check`
        good = dict(index, cases=[c for c in index["cases"] if "error" not in c])
        write_text(args.out_dir / "index.json", json.dumps(good, indent=1) + "\n")
    compute = torch.float32 if args.upcast else None
    counts = {}
    for c in index["cases"]:
        try:
            if "error" in c:
                raise CaseFolderError(c["error"])
            status = run_case(args.export_dir / c["dir"], args.out_dir / c["dir"], kernels, args.impl, compute, device)
        except (CaseFolderError, OSError) as exc:  # this case is not replayed; the others are
            print(f"{prog}: case {c['dir']}: {exc}", file=sys.stderr)
            status = "refused"
        counts[status] = counts.get(status, 0) + 1
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no cases")
    missing = sorted({c["op"] for c in index["cases"]} - set(kernels))
    if missing:
        print(f"no implementation in {args.impl} (skipped): {', '.join(missing)}", file=sys.stderr)
    return 1 if counts.get("ERROR") or counts.get("refused") else 0


if __name__ == "__main__":
    sys.exit(main())
