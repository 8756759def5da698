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
bench table and their ratios to torch. Exit 0; 2 bad usage; 77 torch is not installed.
"""
import argparse
import json
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
    print(f"{'op':36} {'cases':>5} {'torch f64 ms':>12} {'engine ms':>10} {'eng/torch':>9} {'sweep ms':>10} {'sweep/torch':>11}")
    for op in sorted(counts):
        if op not in totals:
            print(f"{op:36} {counts[op]:5}  no torch reference")
            continue
        ms = totals[op] * 1e3
        line = f"{op:36} {counts[op]:5} {ms:12.2f}"
        if op in bench:
            n, eng, sweep = bench[op]
            if n != counts[op]:
                line += f"  (bench timed {n} cases)"
            line += f" {eng:10.2f} {eng / ms:9.2f} {sweep:10.2f} {sweep / ms:11.2f}"
        print(line)
    print(f"torch {torch.__version__}, 1 thread, CPU time of the reference call, the fastest of {args.repeat} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
