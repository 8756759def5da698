"""ulpgym_build -- the in-tree PEP 517 build backend of the ulpgym Python package.

It needs nothing beyond the standard library, so `pip install ./python` works offline:
pip's isolated build environment has nothing to download ([build-system] requires = []).
It writes the pure-Python wheel itself with zipfile (METADATA, WHEEL, entry_points.txt,
top_level.txt, RECORD), an editable wheel (a .pth pointing at this folder), and an sdist.

The version is the first line of VERSION beside pyproject.toml, else ../VERSION (the
source tree's root); the wheel carries it as ulpgym/_version.py.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

NAME = "ulpgym"
SUMMARY = "Precision fuzzing of AI-accelerator operators against an MPFR oracle: cases, judging, pytest plugin"
REQUIRES_PYTHON = ">=3.9"
REQUIRES = ["numpy>=1.19"]
EXTRAS = {"torch": ["torch"]}
ENTRY_POINTS = {
    "console_scripts": {
        "ulpgym-py": "ulpgym._cli:console_main",
        "ulpgym-replay-numpy": "ulpgym._cli:replay_numpy",
        "ulpgym-replay-torch": "ulpgym._cli:replay_torch",
    },
    "pytest11": {"ulpgym": "ulpgym.pytest_plugin"},
}
ROOT = Path(__file__).resolve().parent.parent  # python/: pyproject.toml, ulpgym/, _backend/
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?(\+[A-Za-z0-9.]+)?$")


def version():
    """The package version from VERSION (beside pyproject.toml, else in its parent)."""
    for path in (ROOT / "VERSION", ROOT.parent / "VERSION"):
        if path.is_file():
            text = (path.read_text().strip().splitlines() or [""])[0].strip()
            if not _VERSION_RE.match(text):
                raise ValueError(f"{path}: {text!r} is not a version (e.g. 0.9.0)")
            return text
    raise FileNotFoundError(f"no VERSION file in {ROOT} or {ROOT.parent}: it holds the version, e.g. 0.9.0")


def _dist_info():
    return f"{NAME}-{version()}.dist-info"


def _metadata():
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version()}", f"Summary: {SUMMARY}",
             f"Requires-Python: {REQUIRES_PYTHON}"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, reqs in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    readme = ROOT / "README.md"
    if readme.is_file():
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + readme.read_text()
    return "\n".join(lines) + "\n"


def _entry_points():
    out = []
    for group, entries in ENTRY_POINTS.items():
        out.append(f"[{group}]")
        out += [f"{name} = {target}" for name, target in entries.items()]
        out.append("")
    return "\n".join(out)


def _wheel_meta():
    return "Wheel-Version: 1.0\nGenerator: ulpgym_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _dist_info_files():
    """name -> text of the dist-info files other than RECORD."""
    return {"METADATA": _metadata(), "WHEEL": _wheel_meta(), "entry_points.txt": _entry_points(),
            "top_level.txt": f"{NAME}\n"}


def _package_files():
    """(archive name, bytes) of the package's sources, with the generated _version.py."""
    files = []
    pkg = ROOT / NAME
    for path in sorted(pkg.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            files.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    files.append((f"{NAME}/_version.py", f'"""Written by the build backend from VERSION."""\nversion = "{version()}"\n'
                  .encode()))
    return files


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(path, files):
    """A wheel at path holding files [(name, bytes)], the dist-info and its RECORD."""
    info = _dist_info()
    files = list(files) + [(f"{info}/{n}", t.encode()) for n, t in _dist_info_files().items()]
    record = "\n".join(_record_line(n, d) for n, d in files) + f"\n{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            entry = zipfile.ZipInfo(name, ZIP_DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(entry, data)


def _wheel_name():
    return f"{NAME}-{version().replace('-', '_')}-py3-none-any.whl"


# ---- PEP 517 / PEP 660 hooks --------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = Path(metadata_directory) / _dist_info()
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in _dist_info_files().items():
        (folder / name).write_text(text)
    return folder.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _wheel_name()
    _write_wheel(Path(wheel_directory) / name, _package_files())
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth puts this folder on sys.path: edits to ulpgym/ apply at once."""
    name = _wheel_name()
    _write_wheel(Path(wheel_directory) / name, [(f"__editable__.{NAME}.pth", f"{ROOT}\n".encode())])
    return name


def build_sdist(sdist_directory, config_settings=None):
    """ulpgym-VERSION.tar.gz: pyproject.toml, the backend, the package, its tests, VERSION, PKG-INFO."""
    base = f"{NAME}-{version()}"
    name = f"{base}.tar.gz"
    members = [p for p in sorted(ROOT.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in members:
            _add_bytes(tar, f"{base}/{path.relative_to(ROOT).as_posix()}", path.read_bytes())
        if not (ROOT / "VERSION").is_file():
            _add_bytes(tar, f"{base}/VERSION", (version() + "\n").encode())
        _add_bytes(tar, f"{base}/PKG-INFO", _metadata().encode())
    return name


def _add_bytes(tar, name, data):
    entry = tarfile.TarInfo(name)
    entry.size = len(data)
    entry.mode = 0o644
    entry.mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    tar.addfile(entry, io.BytesIO(data))
