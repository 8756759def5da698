"""ulpgym_torch_refs.py -- the torch contract references of the replay driver under their
old module name: the code is the ulpgym package's ulpgym.torch_refs
(python/ulpgym/torch_refs.py). `--impl ulpgym_torch_refs`, `import ulpgym_torch_refs`
(scripts/oracle_vs_torch.sh) and torch_golden_time.py's default keep working; KERNELS,
fp32_attr, mandated_round and the other public names are that module's.
"""
import ulpgym_path  # noqa: E402,F401 (the package beside these scripts, when not installed)

from ulpgym.torch_refs import *  # noqa: E402,F401,F403
