"""Verdict: the engine's judgement of one case's outputs (ulpgym_case_judge), as Python.

The outcome (PASS, FAIL, NONFINITE, ERROR, SKIP) is decided as a sweep decides it: by the
case's primary standard (the op's own, or the run's --primary), NaN/Inf mismatches and the
discrete compares (docs/STANDARDS.md, "How the outcome of a case is decided"). Every other
standard's verdict is there too, per case and per output with the thresholds it applied.
"""
from typing import Any, Dict, List, Optional

_OUTPUT_KEYS = ("name", "dtype", "provided", "n_checked", "n_total", "standards")


class OutputVerdict:
    """One output's figures: metrics (max_abs, max_rel, max_ulp, mere, mare, rmse, ...) and,
    per standard, {"verdict": PASS|FAIL|NA, "thresholds": {...}}."""

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw
        self.name: str = raw.get("name", "")
        self.dtype: str = raw.get("dtype", "")
        self.provided: bool = bool(raw.get("provided", True))
        self.n_checked: int = raw.get("n_checked", 0)
        self.n_total: int = raw.get("n_total", self.n_checked)
        self.standards: Dict[str, Dict[str, Any]] = raw.get("standards") or {}
        self.metrics: Dict[str, Any] = {k: v for k, v in raw.items() if k not in _OUTPUT_KEYS}

    def verdict(self, standard: str) -> str:
        """This output's verdict under one standard (NA when it does not apply)."""
        entry = self.standards.get(standard)
        if isinstance(entry, dict):
            return entry.get("verdict", "NA")
        return entry or "NA"

    def __repr__(self) -> str:
        return f"<OutputVerdict {self.name} {self.dtype} n_checked={self.n_checked} {self.metrics}>"


class Verdict:
    """The judgement of a case; .raw is the engine's JSON as a dict."""

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw
        self.case_id: str = raw.get("case_id", "")
        self.op: str = raw.get("op", "")
        self.dtype: str = raw.get("dtype", "")
        self.outcome: str = raw.get("verdict", "ERROR")
        self.primary_standard: str = raw.get("primary_standard", "")
        self.message: str = raw.get("message") or ""
        self.figure: str = raw.get("figure") or ""
        self.standards: Dict[str, str] = raw.get("standards") or {}
        self.sample = raw.get("sample")  # the elements checked per output the judgement used (0: all)
        self.outputs: Dict[str, OutputVerdict] = {o.name: o for o in map(OutputVerdict, raw.get("outputs") or [])}
        self.triage: Optional[str] = None  # set when a Recorder stores the case
        self.recorded: Optional[Dict[str, Any]] = None  # the recorder's answer: run_id, outputs_dir, triage

    @property
    def passed(self) -> bool:
        """True when the outcome is PASS."""
        return self.outcome == "PASS"

    def what_decided(self) -> str:
        """The figure that decided the outcome, else the engine's message, else (a PASS the
        engine gives no figure for) each output's largest errors."""
        if self.figure or self.message:
            return self.figure or self.message
        shown = [f"{o.name} max abs {o.metrics['max_abs']:.4g}, max ulp {o.metrics['max_ulp']:.4g}"
                 for o in self.outputs.values()
                 if o.provided and isinstance(o.metrics.get("max_abs"), (int, float))
                 and isinstance(o.metrics.get("max_ulp"), (int, float))]
        return "; ".join(shown) or "-"

    def line(self) -> str:
        """One line: "case ID op dtype FAIL under STANDARD: FIGURE" (the deciding standard)."""
        return (f"case {self.case_id} {self.op} {self.dtype} {self.outcome} under "
                f"{self.primary_standard or '-'}: {self.what_decided()}")

    def report(self) -> str:
        """The verdict line, the standards and, when recorded, the triage command: a failure's text."""
        lines = [self.line()]
        if self.message and self.message != self.what_decided():
            lines.append(f"message: {self.message}")
        lines.append("standards: " + " ".join(f"{k}={v}" for k, v in self.standards.items() if v != "NA"))
        lines.extend(_output_lines(self.outputs.values()))
        lines.append(f"triage: {self.triage}" if self.triage else
                     "triage: not recorded (judge with a Recorder for a paste-ready triage line)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.line()

    def __repr__(self) -> str:
        return f"<Verdict {self.line()}>"


def _output_lines(outputs: Any) -> List[str]:
    """One short line per output: its deciding figures."""
    lines = []
    for o in outputs:
        if not o.provided:
            lines.append(f"  output {o.name} ({o.dtype}): not provided")
            continue
        keys = ("max_abs", "max_rel", "max_ulp", "nonfinite_mismatch")
        figures = " ".join(f"{k} {o.metrics[k]:.4g}" for k in keys if isinstance(o.metrics.get(k), (int, float)))
        lines.append(f"  output {o.name} ({o.dtype}): {o.n_checked} of {o.n_total} checked, {figures}")
    return lines
