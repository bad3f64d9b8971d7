"""Plans in IPC format: one ground action per line, ``;`` comments, unit cost."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from plansuite.errors import PDDLError
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.reader import read_text


def format_plan(actions: Sequence[str]) -> str:
    """IPC plan text.

    >>> print(format_plan(["(pickup b1)", "(stack b1 b2)"]), end="")
    (pickup b1)
    (stack b1 b2)
    ; cost = 2 (unit cost)
    """
    return "".join(f"{a}\n" for a in actions) + f"; cost = {len(actions)} (unit cost)\n"


def write_plan(actions: Sequence[str], path: str | Path) -> Path:
    path = Path(path)
    path.write_text(format_plan(actions))
    return path


def parse_plan(text: str, source: str = "<plan>") -> list[str]:
    """Actions of an IPC plan, canonicalised; ``0: (a b)`` step prefixes are accepted.

    >>> parse_plan("(PICKUP b1)\\n; cost = 1\\n0.0: (stack b1 b2) [1]\\n")
    ['(pickup b1)', '(stack b1 b2)']
    """
    actions = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        if ":" in line.split("(", 1)[0]:
            line = line.split(":", 1)[1].strip()
        if line.endswith("]") and "[" in line:
            line = line[: line.rindex("[")].strip()
        atom = parse_atom_text(line)
        if atom is None:
            raise PDDLError(f"{source}:{number}", "plan step", f"not an action: {raw.strip()[:60]!r}",
                            kind="parse")
        actions.append("(" + " ".join(atom) + ")")
    return actions


def read_plan(path: str | Path) -> list[str]:
    return parse_plan(read_text(path, "plan"), str(path))
