"""ulpgym_path.py -- puts the ulpgym package beside these scripts on sys.path when it is not
installed: python/ of the source tree (examples/replay/../../python) or of an install prefix
(share/ulpgym/examples/../python). The replay scripts import it first, so they run from a
checkout or a prefix without `pip install`.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _folder in (HERE.parent.parent / "python", HERE.parent / "python"):
    if (_folder / "ulpgym" / "__init__.py").is_file():
        if str(_folder) not in sys.path:
            sys.path.insert(0, str(_folder))
        break
