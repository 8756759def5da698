"""ulpgym's pytest plugin (entry point group pytest11, name "ulpgym"): a test that takes the
fixture `ulpgym_case` runs once per selected ulpgym case.

    pytest --ulpgym-op rms_norm_rope --ulpgym-per-op 10 [--ulpgym-plan nightly] [--ulpgym-group G]
           [--ulpgym-limit N] [--ulpgym-seed S] [--ulpgym-db PATH] [--ulpgym-sample N|all]
           [--ulpgym-primary STD] [--ulpgym-run NAME]

    def test_kernel(ulpgym_case):
        return my_kernel(**ulpgym_case.inputs)          # judged by the plugin
    def test_kernel_checked(ulpgym_case):
        ulpgym_case.check(my_kernel(**ulpgym_case.inputs))   # or judged by the test

Node IDs read op-dtype-params-caseid (test_kernel[rms_norm_rope-bf16-hk8-hq32-t4-b3a53a87ca7f9ef2]),
so `-k b3a53a87` picks a case. A failure's text is the verdict line, the standards, the
figures per output and the paste-ready `ulpgym triage` command. Every judged case is
recorded into one run per session (--ulpgym-db PATH, else results.db in pytest's cache
folder), named --ulpgym-run (default "pytest") and closed at the end of the session;
`ulpgym history --db PATH` lists it. A marker narrows a test to the ops or groups it has
kernels for: `@pytest.mark.ulpgym(op=["attn_softmax", "rms_norm_rope"])`; without any
--ulpgym-* selection the test is skipped with the reason, never silently passed. This module imports neither numpy nor
the library until a test asks for a case.
"""
import inspect
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

_SELECTING = ("plan", "op", "group", "limit", "per_op", "seed")
_MARKER_KEYS = frozenset(("op", "group"))
_NO_SELECTION = ("no ulpgym cases selected: run pytest with --ulpgym-op OP (or --ulpgym-group G, "
                 "--ulpgym-plan PLAN, --ulpgym-per-op N)")


def pytest_addoption(parser: Any) -> None:
    g = parser.getgroup("ulpgym", "ulpgym: the test's kernel judged on ulpgym cases against an MPFR oracle")
    g.addoption("--ulpgym-plan", default=None, help="plan name or file (default nightly), NAME:light too")
    g.addoption("--ulpgym-op", action="append", default=None, help="an op's cases (repeatable)")
    g.addoption("--ulpgym-group", action="append", default=None, help="a group's cases (repeatable)")
    g.addoption("--ulpgym-limit", type=int, default=None, help="the first N cases of the selection")
    g.addoption("--ulpgym-per-op", type=int, default=None, help="the first N cases of each op")
    g.addoption("--ulpgym-seed", type=int, default=None, help="the plan's seed replaced (new inputs, new IDs)")
    g.addoption("--ulpgym-regressions", action="store_true", default=False,
                help="corpus/found/'s regression cases too, as a sweep runs them")
    g.addoption("--ulpgym-db", default=None,
                help="the database the session's run is recorded into (default: results.db in pytest's cache)")
    g.addoption("--ulpgym-run", default="pytest", help="the recorded run's name (default pytest)")
    g.addoption("--ulpgym-sample", default=None, help="elements checked per output: N or all (default all)")
    g.addoption("--ulpgym-primary", default=None, help="the standard deciding each outcome (default: the op's own)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "ulpgym(op=..., group=...): the ops or groups (a name or a list) a test "
                                       "that takes ulpgym_case can run: the --ulpgym-* selection narrowed to them")
    config._ulpgym = _Session(config)
    config._ulpgym.check_selection()


def _sample(text: Optional[str]) -> Any:
    if text is None or text == "all":
        return text
    try:
        n = int(text)
    except ValueError:
        raise pytest.UsageError(f"--ulpgym-sample {text}: a number of elements or all") from None
    return "all" if n == 0 else n


def _both(cli: Optional[List[str]], marked: Any) -> Optional[List[str]]:
    """Names selected by the command line and the marker: their intersection when both name some."""
    mark_list = [marked] if isinstance(marked, str) else (list(marked) if marked is not None else None)
    if cli is None or mark_list is None:
        return cli if mark_list is None else mark_list
    return [n for n in cli if n in mark_list]


class _Session:
    """The plugin's state for one pytest session: options, case lists, the recorder."""

    def __init__(self, config: Any):
        self.config = config
        opt = config.getoption
        self.cli = {k: opt("ulpgym_" + k) for k in _SELECTING}
        self.regressions = opt("ulpgym_regressions")
        self.sample = _sample(opt("ulpgym_sample"))
        self.primary = opt("ulpgym_primary")
        self.db = opt("ulpgym_db")
        self.run_name = opt("ulpgym_run")
        self._cases: Dict[str, List[Any]] = {}
        self._recorder: Any = None
        self.recorder_error: Optional[str] = None

    def selection(self, marker: Any) -> Optional[Dict[str, Any]]:
        """The ulpgym.cases() arguments for a test: the command line's selection narrowed by the
        test's marker; None when the command line selects nothing."""
        marked = dict(marker.kwargs) if marker is not None else {}
        unknown = set(marked) - _MARKER_KEYS
        if unknown or (marker is not None and marker.args):
            wrong = sorted(unknown) or list(marker.args)
            raise pytest.UsageError(f"@pytest.mark.ulpgym takes op= and group= only, not {wrong}")
        if all(v is None for v in self.cli.values()) and not self.regressions:
            return None
        chosen = dict(self.cli)
        chosen["op"] = _both(self.cli["op"], marked.get("op"))
        chosen["group"] = _both(self.cli["group"], marked.get("group"))
        chosen["plan"] = chosen["plan"] or "nightly"
        chosen["regressions"] = self.regressions
        return chosen

    def check_selection(self) -> None:
        """Lists the command line's selection once, so that a bad op, group or plan (or a missing
        library) is a usage error before collection; nothing when no --ulpgym-* option is given."""
        selection = self.selection(None)
        if selection is not None and not hasattr(self.config, "workerinput"):  # not in an xdist worker
            self.cases(selection)

    def cases(self, selection: Dict[str, Any]) -> List[Any]:
        """Fresh Case objects of a selection (the plan is listed once per selection)."""
        if selection.get("op") == [] or selection.get("group") == []:
            return []
        key = json.dumps(selection, sort_keys=True)
        if key not in self._cases:
            import ulpgym
            try:
                self._cases[key] = list(ulpgym.cases(**selection))
            except (ulpgym.UlpgymError, ImportError) as exc:
                raise pytest.UsageError(f"ulpgym: {exc}") from exc
        from ulpgym import Case
        return [Case(c.spec, info=c.info) for c in self._cases[key]]

    def db_path(self) -> str:
        """--ulpgym-db, else results.db in pytest's cache folder (a temporary folder without one)."""
        if self.db:
            return self.db
        cache = getattr(self.config, "cache", None)
        if cache is not None:
            return str(Path(cache.mkdir("ulpgym")) / "results.db")
        folder = Path(tempfile.gettempdir()) / f"ulpgym-pytest-{os.getuid()}"
        folder.mkdir(exist_ok=True)
        return str(folder / "results.db")

    def recorder(self) -> Any:
        """The session's run, opened on the first case; None when it cannot be (the reason kept)."""
        if self._recorder is None and self.recorder_error is None:
            import ulpgym
            args = self.config.invocation_params.args
            command = "pytest " + shlex.join(str(a) for a in args)
            try:
                self._recorder = ulpgym.Recorder(self.db_path(), name=self.run_name, primary=self.primary,
                                                 sample=self.sample, command=command)
            except ulpgym.UlpgymError as exc:
                self.recorder_error = str(exc)
        return self._recorder

    def close(self) -> None:
        if self._recorder is not None:
            self._recorder.close()


def _state(config: Any) -> _Session:
    return config._ulpgym


def pytest_generate_tests(metafunc: Any) -> None:
    if "ulpgym_case" not in metafunc.fixturenames:
        return
    state = _state(metafunc.config)
    selection = state.selection(metafunc.definition.get_closest_marker("ulpgym"))
    if selection is None:
        skip = pytest.param(None, marks=pytest.mark.skip(reason=_NO_SELECTION), id="no-ulpgym-cases")
        metafunc.parametrize("ulpgym_case", [skip], indirect=True)
        return
    try:
        found = state.cases(selection)
    except pytest.UsageError as exc:
        pytest.fail(str(exc), pytrace=False)
    if not found:
        shown = {k: v for k, v in selection.items() if v not in (None, False)}
        reason = f"ulpgym: the selection {json.dumps(shown, sort_keys=True)} has no cases"
        skip = pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-ulpgym-cases")
        metafunc.parametrize("ulpgym_case", [skip], indirect=True)
        return
    metafunc.parametrize("ulpgym_case", found, ids=[node_id(c.info) for c in found], indirect=True)


def _short(name: str, value: Any) -> Optional[str]:
    """One param as a short ID token: t4, scale0.125, causal; None when too long to show."""
    if isinstance(value, bool):
        return f"{name}{int(value)}"
    if isinstance(value, int):
        return f"{name}{value}"
    if isinstance(value, float):
        return f"{name}{value:.4g}"
    text = str(value).replace(",", "_")
    return text if len(text) <= 12 else None


def node_id(info: Dict[str, Any], max_params: int = 4) -> str:
    """op-dtype-params-caseid for a plan entry, e.g. rms_norm_rope-bf16-hk8-hq32-t4-b3a53a87ca7f9ef2."""
    params = info.get("params") or {}
    tokens = [t for t in (_short(k, v) for k, v in params.items()) if t][:max_params]
    parts = [info.get("op", "case"), info.get("dtype", "")] + tokens + [info.get("id", "")]
    text = "-".join(p for p in parts if p)
    return "".join(ch if ch.isalnum() or ch in "_.:+=-" else "_" for ch in text)


@pytest.fixture
def ulpgym_case(request: Any) -> Any:
    """The ulpgym case this test runs on (a ulpgym.Case): .inputs, .params, .outputs, .check()."""
    case = getattr(request, "param", None)
    if case is None:
        pytest.skip(_NO_SELECTION)
    state = _state(request.config)
    case.sample, case.primary = state.sample, state.primary
    case.recorder = state.recorder()
    try:
        yield case
    finally:
        case.close()


def _record_status(case: Any, unsupported: bool, reason: str) -> None:
    """Stores a case the test declined (SKIP) or broke on (ERROR); never hides the test's own outcome."""
    if case.recorder is None:
        return
    try:
        case.set_status(unsupported, reason)
        case.recorder.record(case)
    except Exception as exc:  # noqa: BLE001 (the test's own exception is what the user must see)
        case.recorder_note = f"not recorded: {exc}"


def _call(pyfuncitem: Any, case: Any) -> Any:
    """Runs the test function; records SKIP or ERROR when it stops early."""
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    try:
        return pyfuncitem.obj(**args)
    except pytest.skip.Exception as exc:
        _record_status(case, True, str(exc.msg) if getattr(exc, "msg", None) else "skipped by the test")
        raise
    except Exception as exc:
        from ulpgym import VerdictFailure
        if isinstance(exc, VerdictFailure):
            pytest.fail(str(exc), pytrace=False)
        if case.last_verdict is None:  # not judged yet: the kernel (or the test) failed the case
            _record_status(case, False, f"{type(exc).__name__}: {exc}")
        raise


def _not_recorded_note(state: _Session) -> str:
    return f"\n(not recorded: {state.recorder_error})" if state.recorder_error else ""


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Optional[bool]:
    """Calls a test that takes ulpgym_case and judges the outputs it returns."""
    funcargs = getattr(pyfuncitem, "funcargs", {})
    case = funcargs.get("ulpgym_case")
    if case is None or inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    result = _call(pyfuncitem, case)
    state = _state(pyfuncitem.config)
    if result is not None:
        verdict = case.judge(result)
        if not verdict.passed:
            pytest.fail(verdict.report() + _not_recorded_note(state), pytrace=False)
    elif case.status is None:
        pytest.fail(f"{pyfuncitem.name} returned no outputs and did not call ulpgym_case.check() or judge(): "
                    f"return the kernel's outputs (a dict name -> array) or check them", pytrace=False)
    return True


def pytest_sessionfinish(session: Any) -> None:
    state = getattr(session.config, "_ulpgym", None)
    if state is not None:
        state.close()


def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    state = getattr(config, "_ulpgym", None)
    if state is None:
        return
    rec = state._recorder
    if rec is not None:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(rec.counts.items())) or "no cases"
        terminalreporter.write_sep("-", "ulpgym")
        terminalreporter.write_line(f"ulpgym: run {rec.run_id} ({rec.name}) in {rec.db}: {counts}; "
                                    f"see `ulpgym history --db {shlex.quote(rec.db)}`")
    elif state.recorder_error:
        terminalreporter.write_sep("-", "ulpgym")
        terminalreporter.write_line(f"ulpgym: cases not recorded: {state.recorder_error}")
