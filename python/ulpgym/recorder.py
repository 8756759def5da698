"""Recorder: a Python loop over a kernel stored as a real ulpgym run.

    with ulpgym.Recorder("results.db", name="npu-nightly") as rec:
        for case in ulpgym.cases(op="attn_softmax", limit=20):
            verdict = case.judge(my_kernel(case), recorder=rec)
            if not verdict.passed:
                print(verdict.line(), verdict.triage)

The run has backend "replay", as `ulpgym check --run NAME` stores a device's outputs:
`ulpgym history --db results.db` lists it, `failures`, `diff` and `report` read it, and
each case's outputs are kept (one replay folder per case) so that the printed
`ulpgym triage ID --db ...` rejudges them. close() (or leaving the with block) marks the
run done; a run never closed reads "running", its stored cases kept.
"""
import ctypes
import json
import os
from typing import Any, Dict, Optional, Tuple, Union

from . import _lib
from .errors import EngineError


class Recorder:
    """A run in a ulpgym database (created when missing) that judged cases are stored in."""

    def __init__(self, db: Union[str, "os.PathLike[str]"], name: str = "python", outputs: Optional[str] = None,
                 primary: Optional[str] = None, sample: Union[None, int, str] = None, command: Optional[str] = None):
        self.db = os.fspath(db)
        self.name = name
        self.primary = primary
        self.sample = 0 if sample == "all" else sample
        self.counts: Dict[str, int] = {}
        opts: Dict[str, Any] = {"db": self.db, "name": name}
        for key, value in (("outputs", outputs), ("primary", primary), ("sample", self.sample), ("command", command)):
            if value is not None:
                opts[key] = os.fspath(value) if key == "outputs" else value
        self._handle: Optional[int] = _lib.call_handle("ulpgym_recorder_open", _lib.encode_arg(json.dumps(opts)))
        self.run_id: int = int(_lib.load().ulpgym_recorder_run_id(ctypes.c_void_p(self._handle)))

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self._handle is not None else "closed"
        return f"<ulpgym.Recorder run {self.run_id} {self.name!r} in {self.db} ({state}, {self.counts})>"

    def settle(self, sample: Union[None, int, str], primary: Optional[str]) -> Tuple[Any, Optional[str]]:
        """The sample and primary standard a judgement recorded here must use: the run's, which
        triage follows; ValueError when the caller asks for others."""
        wanted = 0 if sample == "all" else sample
        if self.sample is not None and wanted is not None and int(wanted) != int(self.sample):
            raise ValueError(f"run {self.run_id} records sample {self.sample or 'all'}: judge with that sample")
        if self.primary and primary and primary != self.primary:
            raise ValueError(f"run {self.run_id} is decided by {self.primary}: judge with primary={self.primary!r}")
        return (wanted if wanted is not None else self.sample), (primary or self.primary)

    def record(self, case: Any) -> Dict[str, Any]:
        """Stores a judged case (or one given a status) in the run, with its outputs; sets its
        last verdict's .triage. Returns {"run_id", "case_id", "outputs_dir", "triage"}."""
        if self._handle is None:
            raise EngineError(f"run {self.run_id} in {self.db} is closed")
        if case.last_verdict is None and case.status in ("SKIP", "ERROR"):
            case.judge_only(case._options(None, None, self))  # a status is judged as SKIP / ERROR
        answer = _lib.call_json("ulpgym_recorder_add", ctypes.c_void_p(self._handle), ctypes.c_void_p(case._h()))
        verdict = case.last_verdict
        if verdict is not None:
            verdict.triage = answer.get("triage")
            verdict.recorded = answer
        outcome = case.status or "?"
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        return answer

    def close(self) -> None:
        """Marks the run done (its counts recomputed) and closes the database."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        _lib.call_status("ulpgym_recorder_close", ctypes.c_void_p(handle))

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown, or the run could not be closed: it reads "running"
            pass
