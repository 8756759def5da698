#!/usr/bin/env python3
"""replay_torch.py -- run cases exported by `ulpgym export` through torch kernels (CPU,
CUDA or torch_npu) and write the outputs `ulpgym check` judges: the ulpgym package's
`ulpgym-replay-torch` (python/ulpgym/replay_torch.py, where the usage is documented), run
from a source tree without installing the package.

    ulpgym export --op attn_softmax --per-op 20 --dir cases
    python3 replay_torch.py cases out --upcast           # the shipped fp32-upcast references
    python3 replay_torch.py cases out --impl my_kernels --device npu
    ulpgym check --outputs out --run my-device           # verdicts, stored like a sweep

usage: replay_torch.py EXPORT_DIR OUT_DIR [--impl MODULE] [--upcast] [--device cpu|cuda|npu] [--op OP]...

--impl module names are also looked up beside this script (ulpgym_torch_refs,
indexer_test_casts_torch). Imported as a module (torch_golden_time.py does), it is the
driver's module: load_input, store_output, Case, load_kernels, select_cases, UsageError.
Without numpy or torch it prints one line and exits 2.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
import ulpgym_path  # noqa: E402,F401 (the package beside these scripts, when not installed)
try:
    from ulpgym._cli import run_replay_torch
except ImportError:
    print("replay_torch.py: the ulpgym package is neither beside this script (python/ of the tree) nor installed "
          "(pip install ./python)", file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(run_replay_torch(sys.argv[1:], prog="replay_torch.py", search=[str(HERE)]))

from ulpgym import replay_torch as _driver  # noqa: E402
from ulpgym.replay_torch import *  # noqa: E402,F401,F403  (the driver's names, for importers)


def load_kernels(impl, search=()):
    """KERNELS of --impl, module names also looked up beside this script."""
    return _driver.load_kernels(impl, [str(HERE), *search])
