#!/usr/bin/env python3
"""replay_numpy.py -- run cases exported by `ulpgym export` through numpy kernels and write
the outputs that `ulpgym check` judges: the ulpgym package's `ulpgym-replay-numpy`, run
from a source tree (or an installed prefix) without installing the package.

    ulpgym export --op attn_softmax --limit 20 --dir cases   # or: ulpgym export CASE_ID --dir cases
    python3 replay_numpy.py cases                            # writes cases/<id>/outputs/*.npy
    ulpgym check --outputs cases --run my-device             # verdicts, stored like a sweep

The driver and its kernels are python/ulpgym/replay_numpy.py, a file that needs numpy only:
copy it and put your device calls in KERNELS. Without numpy this prints one line and exits 2.
"""
import sys

import ulpgym_path  # noqa: E402,F401 (the package beside these scripts, when not installed)
try:
    from ulpgym._cli import run_replay_numpy
except ImportError:
    print("replay_numpy.py: the ulpgym package is neither beside this script (python/ of the tree) nor installed "
          "(pip install ./python)", file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(run_replay_numpy(sys.argv[1:], prog="replay_numpy.py"))
