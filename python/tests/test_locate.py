"""Where the package looks for libulpgym.so (ulpgym._locate), on made-up layouts."""
import os
from pathlib import Path

from ulpgym import _locate


def touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def pkg_dir(tmp_path):
    """A package folder that is not in a source tree (as an installed wheel's)."""
    return touch(tmp_path / "site" / "ulpgym" / "__init__.py").parent


def test_explicit_lib(tmp_path):
    lib = touch(tmp_path / "x" / "libulpgym.so")
    assert _locate.find_library({"ULPGYM_LIB": str(lib)}, pkg_dir(tmp_path))[0] == lib


def test_explicit_lib_missing_is_not_replaced(tmp_path):
    touch(tmp_path / "build" / "libulpgym.so")
    touch(tmp_path / "build" / "ulpgym")
    env = {"ULPGYM_LIB": str(tmp_path / "nope.so"), "ULPGYM_BIN": str(tmp_path / "build" / "ulpgym")}
    found, tried = _locate.find_library(env, pkg_dir(tmp_path))
    assert found is None and "nope.so (no such file)" in tried[0]


def test_build_folder_and_prefix(tmp_path):
    build = touch(tmp_path / "build" / "libulpgym.so").parent
    touch(build / "ulpgym")
    assert _locate.find_library({"ULPGYM_BIN": str(build / "ulpgym")}, pkg_dir(tmp_path))[0] == build / "libulpgym.so"
    prefix = tmp_path / "prefix"
    program = touch(prefix / "bin" / "ulpgym")
    program.chmod(0o755)
    lib = touch(prefix / "lib" / "libulpgym.so")
    assert _locate.find_library({"PATH": str(prefix / "bin")}, pkg_dir(tmp_path))[0] == lib


def test_symlinked_program(tmp_path):
    prefix = tmp_path / "prefix"
    program = touch(prefix / "bin" / "ulpgym")
    program.chmod(0o755)
    lib = touch(prefix / "lib" / "libulpgym.so")
    link = tmp_path / "bin" / "ulpgym"
    link.parent.mkdir()
    os.symlink(program, link)
    assert _locate.find_library({"PATH": str(link.parent)}, pkg_dir(tmp_path))[0] == lib


def test_source_checkout_and_installed_source(tmp_path):
    tree = tmp_path / "tree"
    touch(tree / "python" / "pyproject.toml")
    pkg = touch(tree / "python" / "ulpgym" / "__init__.py").parent
    lib = touch(tree / "build" / "libulpgym.so")
    assert _locate.find_library({"PATH": ""}, pkg)[0] == lib
    prefix = tmp_path / "p"
    touch(prefix / "share" / "ulpgym" / "python" / "pyproject.toml")
    pkg = touch(prefix / "share" / "ulpgym" / "python" / "ulpgym" / "__init__.py").parent
    lib = touch(prefix / "lib" / "libulpgym.so")
    assert _locate.find_library({"PATH": ""}, pkg)[0] == lib


def test_not_found_message_names_places_and_fixes(tmp_path):
    found, tried = _locate.find_library({"PATH": ""}, pkg_dir(tmp_path))
    assert found is None
    text = _locate.not_found_message(tried)
    for part in ("$ULPGYM_LIB (unset)", "ulpgym on PATH (none)", "cmake --install build --prefix P",
                 "ULPGYM_LIB=/path/to/libulpgym.so"):
        assert part in text


def test_the_package_finds_the_library():
    import ulpgym
    assert Path(ulpgym.library_path()).name == "libulpgym.so"
    assert ulpgym.engine_version().startswith("ulpgym ")
