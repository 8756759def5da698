"""Shared fixtures of the ulpgym package's own tests (run by tests/test_python_package.sh).

They test the package as imported (an installed copy in a venv, or python/ on PYTHONPATH)
against the library it finds, and use the `ulpgym` program ($ULPGYM_BIN, else PATH) for
the command-line side: export, sweep, triage, history.
"""
import os
import shutil
import subprocess

import pytest


@pytest.fixture(scope="session")
def ulpgym_bin():
    """The ulpgym program; the tests that need it are skipped without one."""
    path = os.environ.get("ULPGYM_BIN") or shutil.which("ulpgym")
    if not path:
        pytest.skip("no ulpgym program ($ULPGYM_BIN or PATH)")
    return path


@pytest.fixture(scope="session")
def run_cli(ulpgym_bin):
    """run_cli(*args) -> CompletedProcess of the ulpgym program (text, not checked)."""
    def run(*args):
        return subprocess.run([ulpgym_bin, *map(str, args)], capture_output=True, text=True)
    return run


pytest_plugins = ["pytester"]


@pytest.fixture
def plugin_args():
    """-p ulpgym.pytest_plugin when the plugin is not installed as an entry point (python/ on PYTHONPATH)."""
    from importlib.metadata import entry_points
    groups = entry_points()
    found = groups.select(group="pytest11") if hasattr(groups, "select") else groups.get("pytest11", [])
    return [] if any(e.name == "ulpgym" for e in found) else ["-p", "ulpgym.pytest_plugin"]
