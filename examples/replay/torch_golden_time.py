#!/usr/bin/env python3
"""torch_golden_time.py -- the outside yardstick of `ulpgym bench oracle`: how long a float64
golden in torch on one CPU core (what reference suites use instead of an exact oracle) takes
on the cases of an `ulpgym export`, per op, beside ulpgym's exact oracle on the same cases.

    ulpgym export --op attn_softmax --per-op 20 --dir cases
    ulpgym bench oracle --plan cases/plan.json --sample all --no-mpfr --repeat 3 > ulpgym.txt
    python3 torch_golden_time.py cases --ulpgym ulpgym.txt [--repeat 3]

usage: torch_golden_time.py EXPORT_DIR [--ulpgym BENCH_OUTPUT] [--repeat R] [--impl MODULE]

Each case's inputs are loaded as float64 (integers as they are) and the op's reference in
ulpgym_torch_refs (or --impl) runs under torch.no_grad with torch.set_num_threads(1); the
time is the CPU time (time.process_time) of the kernel call alone, the fastest of R runs,
after one untimed warm-up run per op. Ops without a torch reference are listed as such.
Prints per op: cases, torch-f64 ms and, with --ulpgym, the engine and sweep-oracle ms of the
bench table and their ratios to torch, each beside the GFLOP/s torch's BLAS gives a 1024x1024
float64 matmul on the same thread (the yardstick's own speed: a ratio against the reference
BLAS, which Debian's torch links unless OpenBLAS is installed, flatters ulpgym about 13x on
GEMM-shaped ops), then the ratios summed over the ops and their geometric mean. The BLAS
library in use is named from the process's mapped libraries. Exit 0; 2 bad usage; 77 torch
is not installed.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

try:
    import torch
except ImportError:
    print("skipped: torch is not installed for this python (Debian: apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_torch  # noqa: E402  (the export reader and the Case the references take)


def load_inputs(case_dir, spec):
    """The case's inputs, floating ones as float64 on the CPU."""
    tensors = {}
    for t in spec["inputs"]:
        x = replay_torch.load_input(case_dir / t["file"], t["dtype"], None, torch.device("cpu"))
        tensors[t["name"]] = x.double() if x.is_floating_point() else x
    return tensors


def time_case(kernel, case_dir, repeat):
    """CPU seconds of the fastest of repeat runs of kernel on the case, after a warm-up run."""
    spec = json.loads((case_dir / "case.json").read_text())
    case = replay_torch.Case(spec, torch.float64, torch.device("cpu"))
    tensors = load_inputs(case_dir, spec)
    best = None
    with torch.no_grad():
        for _ in range(repeat):
            t0 = time.process_time()
            kernel(case, **tensors)
            t = time.process_time() - t0
            best = t if best is None or t < best else best
    return spec["op"], best


def blas_in_use():
    """Which BLAS torch's float64 matmul calls: the kind (openblas, mkl, blis, reference:
    netlib's, Debian's libblas3; or linked into torch, as pip wheels carry MKL) and the
    resolved paths of the BLAS libraries this process mapped. Debian's torch calls
    libblas.so.3, which the alternatives system points at OpenBLAS when it is installed."""
    torch.ones(8, 8, dtype=torch.float64) @ torch.ones(8, 8, dtype=torch.float64)  # maps it
    libs, blas = set(), None
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            name = Path(path).name.lower()
            if any(k in name for k in ("blas", "mkl", "blis")):
                resolved = str(Path(path).resolve())
                libs.add(resolved)
                if name.startswith("libblas.so"):
                    blas = resolved.lower()
    text = blas or " ".join(sorted(libs)).lower()
    kind = ("openblas" if "openblas" in text else "mkl" if "mkl" in text else "blis" if "blis" in text
            else "reference" if "blas" in text else "linked into torch")
    return kind, sorted(libs)


def matmul_gflops(repeat, n=1024):
    """GFLOP/s of an n x n float64 matmul on this thread: 2n^3 flops over the fastest CPU time."""
    a = torch.rand(n, n, dtype=torch.float64)
    b = torch.rand(n, n, dtype=torch.float64)
    a @ b  # warm-up
    best = None
    for _ in range(max(repeat, 1)):
        t0 = time.process_time()
        a @ b
        t = time.process_time() - t0
        best = t if best is None or t < best else best
    return 2.0 * n ** 3 / max(best, 1e-9) / 1e9


def read_bench(path):
    """op -> (cases, engine ms, sweep ms) from an `ulpgym bench oracle` table."""
    rows = {}
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if len(f) == 10 and f[0] not in ("op", "all"):
            rows[f[0]] = (int(f[1]), float(f[3]), float(f[9]))
    return rows


def main(argv):
    parser = argparse.ArgumentParser(prog="torch_golden_time.py", description=__doc__.splitlines()[0])
    parser.add_argument("export_dir", type=Path)
    parser.add_argument("--ulpgym", type=Path, help="the output of `ulpgym bench oracle` on the same cases")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--impl", default="ulpgym_torch_refs")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        kernels = replay_torch.load_kernels(args.impl)
        index = replay_torch.select_cases(args.export_dir, [])
    except replay_torch.UsageError as exc:
        parser.error(str(exc))
    torch.set_num_threads(1)
    totals, counts, warmed = {}, {}, set()
    for entry in index["cases"]:
        op = entry["op"]
        kernel = kernels.get(op)
        if kernel is None:
            counts.setdefault(op, 0)
            continue
        case_dir = args.export_dir / entry["dir"]
        if op not in warmed:  # torch's first call on an op pays its lazy set-up
            time_case(kernel, case_dir, 1)
            warmed.add(op)
        _, seconds = time_case(kernel, case_dir, args.repeat)
        totals[op] = totals.get(op, 0.0) + seconds
        counts[op] = counts.get(op, 0) + 1
    bench = read_bench(args.ulpgym) if args.ulpgym else {}
    kind, libs = blas_in_use()
    gflops = matmul_gflops(args.repeat)
    print(f"{'op':36} {'cases':>5} {'torch f64 ms':>12} {'engine ms':>10} {'eng/torch':>9} {'sweep ms':>10} "
          f"{'sweep/torch':>11} {'BLAS GFLOP/s':>12}")
    sums = [0.0, 0.0, 0.0]  # torch, engine, sweep ms over the ops with all three
    logs, n_ratio = [0.0, 0.0], 0
    for op in sorted(counts):
        if op not in totals:
            print(f"{op:36} {counts[op]:5}  no torch reference")
            continue
        ms = totals[op] * 1e3
        line = f"{op:36} {counts[op]:5} {ms:12.2f}"
        if op in bench:
            n, eng, sweep = bench[op]
            line += f" {eng:10.2f} {eng / ms:9.2f} {sweep:10.2f} {sweep / ms:11.2f} {gflops:12.1f}"
            if n != counts[op]:
                line += f"  (bench timed {n} cases)"
            if ms > 0 and eng > 0 and sweep > 0:
                sums = [sums[0] + ms, sums[1] + eng, sums[2] + sweep]
                logs = [logs[0] + math.log(eng / ms), logs[1] + math.log(sweep / ms)]
                n_ratio += 1
        print(line)
    if n_ratio:
        print(f"{'summed over ' + str(n_ratio) + ' ops':42} {sums[0]:12.2f} {sums[1]:10.2f} {sums[1] / sums[0]:9.2f} "
              f"{sums[2]:10.2f} {sums[2] / sums[0]:11.2f} {gflops:12.1f}")
        print(f"{'geometric mean of the ratios':42} {'':12} {'':10} {math.exp(logs[0] / n_ratio):9.2f} "
              f"{'':10} {math.exp(logs[1] / n_ratio):11.2f} {gflops:12.1f}")
    print(f"torch {torch.__version__}, 1 thread, CPU time of the reference call, the fastest of {args.repeat} runs")
    print(f"BLAS: {kind} ({', '.join(libs) or 'no BLAS library mapped'}); a 1024x1024 float64 matmul at "
          f"{gflops:.1f} GFLOP/s on this thread")
    if kind == "reference" or gflops < 10:
        print(f"warning: torch's BLAS ({kind}, {gflops:.1f} GFLOP/s) is an unoptimised yardstick: the ratios above "
              "flatter ulpgym. Install OpenBLAS (Debian: apt-get install libopenblas0-pthread) and run again.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
