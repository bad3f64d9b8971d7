"""The paper's text format for transitions, and a decoder that never raises.

A state is its true atoms, sorted lexicographically, one per line. A transition is::

    GOAL:
    (on b1 b2)
    STATE:
    (arm-empty)
    ...
    ACTION:
    (pickup b1)
    NEXT STATE:
    ...
    END

The prompt is everything up to and including the ``STATE:`` block; the completion starts at
``ACTION:``. Model output goes through :func:`parse_completion`, which returns either a
:class:`Step` or a typed :class:`ParseFailure` — garbage is data, not an exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from plansuite.pddl.model import parse_atom_text

GOAL, STATE, ACTION, NEXT_STATE, END = "GOAL:", "STATE:", "ACTION:", "NEXT STATE:", "END"
MARKERS = (GOAL, STATE, ACTION, NEXT_STATE, END)
# Only the diff verifier's input uses these; tokenizers add them when a diff verifier is built, so
# every other model's vocabulary (and so its initial weights) stays as it was.
ADDED, DELETED = "ADDED:", "DELETED:"
DIFF_MARKERS = (ADDED, DELETED)


def format_atoms(atoms: Iterable[str]) -> str:
    """Sorted, de-duplicated atom lines.

    >>> print(format_atoms(["(on-table b1)", "(on b2 b1)", "(arm-empty)"]))
    (arm-empty)
    (on b2 b1)
    (on-table b1)
    """
    return "\n".join(sorted(set(atoms)))


def _block(marker: str, lines: Iterable[str]) -> str:
    body = format_atoms(lines)
    return f"{marker}\n{body}\n" if body else f"{marker}\n"


def format_prompt(goal: Iterable[str], state: Iterable[str]) -> str:
    """``GOAL:`` and ``STATE:`` blocks; the generator continues from here."""
    return _block(GOAL, goal) + _block(STATE, state)


def format_completion(action: str, next_state: Iterable[str]) -> str:
    """``ACTION:`` and ``NEXT STATE:`` blocks, ending with ``END``."""
    return f"{ACTION}\n{action}\n" + _block(NEXT_STATE, next_state) + END


def format_transition(goal: Iterable[str], state: Iterable[str], action: str,
                      next_state: Iterable[str]) -> str:
    return format_prompt(goal, state) + format_completion(action, next_state)


def format_verifier_input(state: Iterable[str], action: str,
                          next_state: Iterable[str] | None = None) -> str:
    """What the verifier scores: a state and an action (optionally the claimed next state).

    >>> print(format_verifier_input(["(arm-empty)"], "(pickup b1)"))
    STATE:
    (arm-empty)
    ACTION:
    (pickup b1)
    """
    text = _block(STATE, state) + f"{ACTION}\n{action}"
    if next_state is not None:
        text += "\n" + _block(NEXT_STATE, next_state).rstrip("\n")
    return text


def format_verifier_diff_input(state: Iterable[str], action: str,
                               next_state: Iterable[str]) -> str:
    """The state, the action and the claimed change: atoms the claim adds and deletes.

    The same information as the claimed next state (``s' = s - deleted + added``), laid out so
    that checking a step is local: the action's preconditions in ``STATE:``, its effects in
    ``ADDED:``/``DELETED:``.

    >>> print(format_verifier_diff_input(["(arm-empty)", "(clear b1)", "(on-table b1)"],
    ...                                  "(pickup b1)", ["(holding b1)"]))
    STATE:
    (arm-empty)
    (clear b1)
    (on-table b1)
    ACTION:
    (pickup b1)
    ADDED:
    (holding b1)
    DELETED:
    (arm-empty)
    (clear b1)
    (on-table b1)
    """
    before, after = set(state), set(next_state)
    return (_block(STATE, before) + f"{ACTION}\n{action}\n" + _block(ADDED, after - before)
            + _block(DELETED, before - after)).rstrip("\n")


@dataclass(frozen=True)
class Step:
    """A decoded completion: the proposed action and the claimed next state (sorted atoms)."""

    action: str
    next_state: tuple[str, ...]


@dataclass(frozen=True)
class ParseFailure:
    """Model output that is not a well-formed completion; ``reason`` says why."""

    reason: str
    text: str

    def __bool__(self) -> bool:  # lets callers write `if not parsed:`
        return False


def _canonical_atom(line: str) -> str | None:
    atom = parse_atom_text(line)
    return None if atom is None else "(" + " ".join(atom) + ")"


def parse_completion(text: str) -> Step | ParseFailure:
    """Decode ``ACTION: ... NEXT STATE: ... END``; anything else is a ParseFailure.

    >>> parse_completion("ACTION:\\n(pickup b1)\\nNEXT STATE:\\n(holding b1)\\nEND")
    Step(action='(pickup b1)', next_state=('(holding b1)',))
    >>> parse_completion("ACTION:\\n(pickup b1)\\nNEXT STATE:\\n(holding").reason
    'truncated: no END'
    >>> parse_completion("\\x00garbage").reason
    'missing ACTION:'
    """
    if not isinstance(text, str):
        return ParseFailure("not text", repr(text))
    lines = [ln.strip() for ln in text.replace("\r", "").split("\n")]
    lines = [ln for ln in lines if ln]
    if not lines or lines[0] != ACTION:
        return ParseFailure("missing ACTION:", text)
    if len(lines) < 3 or lines[2] != NEXT_STATE:
        return ParseFailure("missing NEXT STATE:" if len(lines) >= 2 else "missing action", text)
    action = _canonical_atom(lines[1])
    if action is None:
        return ParseFailure(f"malformed action {lines[1][:40]!r}", text)
    if END not in lines[3:]:
        return ParseFailure("truncated: no END", text)
    body = lines[3:lines.index(END, 3)]
    atoms = []
    for line in body:
        atom = _canonical_atom(line)
        if atom is None:
            return ParseFailure(f"malformed atom {line[:40]!r}", text)
        atoms.append(atom)
    return Step(action, tuple(sorted(set(atoms))))


@dataclass(frozen=True)
class Transition:
    goal: tuple[str, ...]
    state: tuple[str, ...]
    action: str
    next_state: tuple[str, ...]


def parse_transition(text: str) -> Transition | ParseFailure:
    """Decode a whole transition (prompt + completion).

    >>> t = format_transition(["(on a b)"], ["(arm-empty)"], "(pickup a)", ["(holding a)"])
    >>> parse_transition(t) == Transition(("(on a b)",), ("(arm-empty)",), "(pickup a)", ("(holding a)",))
    True
    """
    if not isinstance(text, str):
        return ParseFailure("not text", repr(text))
    head, sep, tail = text.partition(ACTION)
    if not sep:
        return ParseFailure("missing ACTION:", text)
    lines = [ln.strip() for ln in head.split("\n") if ln.strip()]
    if not lines or lines[0] != GOAL or STATE not in lines:
        return ParseFailure("missing GOAL:/STATE: blocks", text)
    cut = lines.index(STATE)
    goal = [_canonical_atom(ln) for ln in lines[1:cut]]
    state = [_canonical_atom(ln) for ln in lines[cut + 1:]]
    if None in goal or None in state:
        return ParseFailure("malformed atom in prompt", text)
    step = parse_completion(sep + tail)
    if isinstance(step, ParseFailure):
        return step
    return Transition(tuple(sorted(set(goal))), tuple(sorted(set(state))), step.action, step.next_state)
