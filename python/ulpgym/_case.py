"""Cases: list a plan's cases, build one's inputs bit for bit, judge a kernel's outputs.

    import ulpgym
    for case in ulpgym.cases(op="attn_softmax", limit=5):
        with case:
            y = my_kernel(case.inputs["x"], case.inputs["mask"], **case.params)
            print(case.judge({"y": y}).line())

A Case is light until it is used: listing a plan reads IDs and specs only; the engine
builds the case (inputs drawn, outputs allocated) on the first access to .inputs,
.params, .outputs or .judge, and frees it on close() (it is rebuilt if used again).
"""
import ctypes
import json
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._outputs import OutputSpec, by_name, encoded
from .dtypes import decode, encode
from .errors import VerdictFailure
from .verdict import Verdict

OpSelection = Union[None, str, Sequence[str]]
_HEX_ID = re.compile(r"^[0-9a-fA-F]{6,16}$")
_contracts: Dict[str, Dict[str, Any]] = {}


def _as_list(value: OpSelection) -> Optional[List[str]]:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def plan_query(plan: Optional[str] = "nightly", op: OpSelection = None, group: OpSelection = None,
               limit: Optional[int] = None, per_op: Optional[int] = None, seed: Optional[int] = None,
               regressions: bool = False) -> Dict[str, Any]:
    """The query JSON of ulpgym_plan_cases, only what was given."""
    query: Dict[str, Any] = {}
    for key, value in (("plan", plan), ("ops", _as_list(op)), ("groups", _as_list(group)),
                       ("limit", limit), ("per_op", per_op), ("seed", seed)):
        if value is not None:
            query[key] = value
    if regressions:
        query["regressions"] = True
    return query


def plan_cases(**query: Any) -> Dict[str, Any]:
    """The engine's answer for a plan query: {"plan": {...}, "cases": [...]}."""
    text = json.dumps(plan_query(**query))
    return _lib.call_json("ulpgym_plan_cases", _lib.encode_arg(text))


def cases(plan: Optional[str] = "nightly", op: OpSelection = None, group: OpSelection = None,
          limit: Optional[int] = None, per_op: Optional[int] = None, seed: Optional[int] = None,
          regressions: bool = False) -> Iterator["Case"]:
    """The cases of a plan (plan order), filtered by op and group names, the first `limit`
    of them or the first `per_op` of each op; seed replaces the plan's seed (new inputs and
    IDs); regressions adds corpus/found/'s cases as a sweep runs them. Each is built on use."""
    answer = plan_cases(plan=plan, op=op, group=group, limit=limit, per_op=per_op, seed=seed,
                        regressions=regressions)  # here, so that a bad query raises at the call
    return iter([Case(info["spec"], info=info) for info in answer.get("cases", [])])


def _spec_text(spec: Union[str, Dict[str, Any]]) -> str:
    return spec if isinstance(spec, str) else json.dumps(spec, sort_keys=True, separators=(",", ":"))


def case(id_or_spec: Union[str, Dict[str, Any]], db: Optional[str] = None, plan: Optional[str] = None) -> "Case":
    """One case: a case ID or unique prefix of 6+ hex digits (looked up in db, then in plan,
    as `ulpgym triage` does), or a spec (JSON text or dict). Built at once: a bad ID or spec
    raises EngineError here."""
    if isinstance(id_or_spec, str) and _HEX_ID.match(id_or_spec.strip()):
        spec = _lib.call_text("ulpgym_find_case", _lib.encode_arg(id_or_spec.strip()), _lib.encode_arg(db),
                              _lib.encode_arg(plan))
    else:
        spec = _spec_text(id_or_spec)
    c = Case(spec)
    c.open()
    return c


def contract(op: str) -> Dict[str, Any]:
    """The op's contract, as `ulpgym ops show OP --json` prints it (cached)."""
    if op not in _contracts:
        _contracts[op] = _lib.call_json("ulpgym_op_contract", _lib.encode_arg(op))
    return _contracts[op]


class Case:
    """One ulpgym case: its ID, op, dtype, params and spec, its inputs as numpy arrays,
    its declared outputs, and judge() / check() for a kernel's outputs."""

    def __init__(self, spec: Union[str, Dict[str, Any]], info: Optional[Dict[str, Any]] = None):
        self.info: Dict[str, Any] = dict(info or {})  # the plan's entry: id, op, group, dtype, params, ...
        self._spec = _spec_text(spec)
        self._handle: Optional[int] = None
        self._described: Optional[Dict[str, Any]] = None
        self._inputs: Optional[Dict[str, np.ndarray]] = None
        self.last_verdict: Optional[Verdict] = None
        self.status: Optional[str] = None  # the latest outcome: a verdict's, or SKIP / ERROR from set_status
        self.recorder = None  # a Recorder judge() and check() record into by default
        self.sample: Union[None, int, str] = None  # judge()'s default sample
        self.primary: Optional[str] = None  # judge()'s default primary standard

    # -- the engine's case -------------------------------------------------------------
    def open(self) -> "Case":
        """Builds the case in the engine (inputs drawn, outputs allocated); done on first use."""
        if self._handle is None:
            self._handle = _lib.call_handle("ulpgym_case_open", _lib.encode_arg(self._spec))
        return self

    def close(self) -> None:
        """Frees the engine's case (used again, it is rebuilt). Inputs already read stay valid."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            _lib.load().ulpgym_case_close(handle)

    def __enter__(self) -> "Case":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def _h(self) -> int:
        self.open()
        assert self._handle is not None
        return self._handle

    def describe(self) -> Dict[str, Any]:
        """ulpgym_case_describe: id, op, group, dtype, spec, params, params_json, primary, inputs, outputs."""
        if self._described is None:
            ptr = _lib.load().ulpgym_case_describe(ctypes.c_void_p(self._h()))
            if not ptr:
                raise MemoryError("ulpgym_case_describe: out of memory")
            self._described = json.loads(_lib.take_text(ptr))
        return self._described

    def _known(self, key: str) -> Any:
        return self.info[key] if key in self.info else self.describe()[key]

    # -- what the case is --------------------------------------------------------------
    @property
    def id(self) -> str:
        """The 16-hex-digit case ID."""
        return self._known("id")

    @property
    def op(self) -> str:
        return self._known("op")

    @property
    def group(self) -> str:
        return self._known("group")

    @property
    def dtype(self) -> str:
        """The case dtype (each tensor's own dtype is in .outputs and describe()["inputs"])."""
        return self._known("dtype")

    @property
    def spec(self) -> str:
        """The canonical spec text (`ulpgym case --spec` runs it)."""
        return self.info.get("spec") or self.describe()["spec"]

    @property
    def params(self) -> Dict[str, Any]:
        """Every param of the op, defaults written in."""
        return self.describe()["params"]

    @property
    def params_json(self) -> str:
        """The exact params text a plugin kernel receives."""
        return self.describe()["params_json"]

    @property
    def primary_standard(self) -> str:
        """The op's own deciding standard."""
        return self.describe()["primary"]

    @property
    def contract(self) -> Dict[str, Any]:
        """The op's contract (ulpgym_op_contract; `ulpgym ops show OP --json`)."""
        return contract(self.op)

    @property
    def outputs(self) -> List[OutputSpec]:
        """The declared outputs, in order: name, dtype, shape, npy_dtype, optional."""
        return [OutputSpec(k, o["name"], o["dtype"], tuple(o["shape"]), np.dtype(o["npy_dtype"]),
                           bool(o.get("optional", False)))
                for k, o in enumerate(self.describe()["outputs"])]

    def output(self, name: str) -> OutputSpec:
        """One declared output by name; KeyError naming the outputs when unknown."""
        for o in self.outputs:
            if o.name == name:
                return o
        raise KeyError(f"{self.op} has no output {name!r}: {', '.join(o.name for o in self.outputs)}")

    def __repr__(self) -> str:
        params = self.info.get("params")
        shown = json.dumps(params, sort_keys=True, separators=(",", ":")) if params is not None else ""
        what = " ".join(str(self.info.get(k, "?")) for k in ("id", "op", "dtype"))
        return f"<ulpgym.Case {what} {shown}>"

    # -- inputs ------------------------------------------------------------------------
    def _input_array(self, k: int, meta: Dict[str, Any]) -> np.ndarray:
        size = ctypes.c_size_t()
        ptr = _lib.load().ulpgym_case_input(ctypes.c_void_p(self._h()), k, ctypes.byref(size))
        form = np.dtype(meta["npy_dtype"])
        if not ptr or size.value != meta["nbytes"]:
            raise RuntimeError(f"ulpgym_case_input({k}) gave no data for {meta['name']}")
        raw = (ctypes.c_char * size.value).from_address(ptr)
        return np.frombuffer(raw, dtype=form).reshape(meta["shape"]).copy()

    @property
    def inputs(self) -> Dict[str, np.ndarray]:
        """Every input (drawn and built), name -> numpy array in its documented form (a copy)."""
        if self._inputs is None:
            metas = self.describe()["inputs"]
            self._inputs = {m["name"]: self._input_array(k, m) for k, m in enumerate(metas)}
        return self._inputs

    def input_dtype(self, name: str) -> str:
        """The ulpgym dtype of an input."""
        for m in self.describe()["inputs"]:
            if m["name"] == name:
                return m["dtype"]
        raise KeyError(f"{self.op} has no input {name!r}: {', '.join(self.inputs)}")

    def input_values(self, name: Optional[str] = None, dtype: Any = np.float64) -> Any:
        """An input's exact values decoded (bf16 and fp8 bits too) as float64 (or dtype, e.g.
        np.float32); without a name, a dict of every input."""
        if name is None:
            return {n: self.input_values(n, dtype) for n in self.inputs}
        values = decode(self.inputs[name], self.input_dtype(name))
        return values if np.dtype(dtype) == np.float64 else values.astype(dtype)

    def torch_inputs(self, device: Any = None) -> Dict[str, Any]:
        """Every input as a torch tensor (bf16 as torch.bfloat16, fp8 as float8), on device."""
        from .torch import to_torch
        return {n: to_torch(a, self.input_dtype(n), device) for n, a in self.inputs.items()}

    def encode_outputs(self, values: Dict[str, Any]) -> Dict[str, np.ndarray]:
        """Float values per output name, each rounded once (RNE) to its output's dtype."""
        specs = {o.name: o for o in self.outputs}
        unknown = [n for n in values if n not in specs]
        if unknown:
            raise ValueError(f"unknown output {unknown[0]!r} of {self.op}: its outputs are {', '.join(specs)}")
        return {n: encode(np.asarray(v, dtype=np.float64).reshape(specs[n].shape), specs[n].dtype)
                for n, v in values.items() if v is not None}

    # -- judging -----------------------------------------------------------------------
    def set_outputs(self, outputs: Any) -> None:
        """Hands outputs to the engine (see ulpgym._outputs for the accepted forms)."""
        declared = self.outputs
        given = by_name(outputs, declared, self.op)
        for spec in declared:
            if spec.name in given:
                self._set_output(spec, given[spec.name])

    def _set_output(self, spec: OutputSpec, value: Any) -> None:
        data, encoding = encoded(value, spec)
        err = ctypes.c_void_p()
        status = _lib.load().ulpgym_case_set_output(ctypes.c_void_p(self._h()), spec.index,
                                                    ctypes.c_void_p(data.ctypes.data), data.nbytes, encoding,
                                                    ctypes.byref(err))
        if status < 0:
            reason = _lib.take_text(err.value) if err.value else "refused"
            raise ValueError(f"output {spec.name} of {self.op} ({spec.dtype}): {reason}")

    def set_status(self, unsupported: bool, reason: str) -> None:
        """Marks the case declined by the kernel (unsupported: SKIP) or failed (ERROR), with a
        one-line reason, as a replay folder's unsupported.txt / error.txt does; record() stores it."""
        self.last_verdict = None
        self.status = "SKIP" if unsupported else "ERROR"
        _lib.call_status("ulpgym_case_set_status", ctypes.c_void_p(self._h()), 1 if unsupported else 0,
                         _lib.encode_arg(reason.splitlines()[0] if reason else "-"))

    def _options(self, sample: Any, primary: Optional[str], recorder: Any) -> Dict[str, Any]:
        sample = sample if sample is not None else self.sample
        primary = primary or self.primary
        if recorder is not None:
            sample, primary = recorder.settle(sample, primary)
        opts: Dict[str, Any] = {}
        if sample is not None:
            opts["sample"] = "all" if sample in ("all", 0, "0") else int(sample)
        if primary:
            opts["primary"] = primary
        return opts

    def judge(self, outputs: Any = None, sample: Union[None, int, str] = None, primary: Optional[str] = None,
              recorder: Any = None) -> Verdict:
        """Judges outputs (see set_outputs; None: those already set) exactly as a sweep judges a
        kernel's: the same metrics, standards and outcome. sample: N or "all" elements checked
        per output (default every one); primary: the numeric standard deciding the outcome (default
        the op's own). With a recorder (or self.recorder) the case is stored in its run and
        verdict.triage is the paste-ready triage command."""
        recorder = recorder if recorder is not None else self.recorder
        if outputs is not None:
            self.set_outputs(outputs)
        verdict = self.judge_only(self._options(sample, primary, recorder))
        if recorder is not None:
            recorder.record(self)
        return verdict

    def judge_only(self, options: Dict[str, Any]) -> Verdict:
        """ulpgym_case_judge with options as given ({"sample", "primary"}), nothing recorded."""
        raw = _lib.call_json("ulpgym_case_judge", ctypes.c_void_p(self._h()), _lib.encode_arg(json.dumps(options)))
        self.last_verdict = Verdict(raw)
        self.status = self.last_verdict.outcome
        return self.last_verdict

    def check(self, outputs: Any = None, **options: Any) -> Verdict:
        """judge(), then raises VerdictFailure (an AssertionError: the verdict line, figures and
        triage command) unless the outcome is PASS. Returns the verdict."""
        verdict = self.judge(outputs, **options)
        if not verdict.passed:
            raise VerdictFailure(verdict.report(), verdict)
        return verdict
