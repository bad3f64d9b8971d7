"""Problems whose ``:goal`` mixes literals with numeric comparisons (PDDL 2.1), for any domain.

``(:goal (and (at t1 la) (<= (+ (value c0) 1) (value c1))))``: :func:`parse_problem21` reads
each comparison conjunct (also ``(not (< a b))``, read as ``(>= a b)``) from the reader's tree,
checks it against the domain like an action's condition (functions declared, arity, objects
declared and of the right type; ``+`` and ``*`` may take more than two operands, as PDDL 3.1
allows), and hands the text with the comparisons blanked out (so every line number stays) to
:func:`~plansuite.pddl.parse.parse_problem` for everything else: objects, init, fluent values,
literal goals, metric. The comparisons come back in canonical form
(:mod:`~plansuite.pddl.expressions`) as ``Problem.goal_numeric``. A goal without comparisons
reads exactly as ``parse_problem`` reads it, so this is the problem reader for every domain.

>>> from plansuite.domains import BUILTIN_DIR
>>> from plansuite.pddl.expressions import expr_text
>>> from plansuite.pddl.parse import load_domain
>>> fuel = load_domain(BUILTIN_DIR / "fuel-delivery.pddl")
>>> p = parse_problem21('''(define (problem p) (:domain fuel-delivery)
...   (:objects t1 - truck la - location)
...   (:init (at t1 la) (= (fuel t1) 3) (= (carried t1) 0) (= (capacity t1) 1) (= (fuel-used) 0))
...   (:goal (and (at t1 la) (> (fuel t1) (+ 1 (fuel-used))))))''', fuel)
>>> sorted(p.goal_pos), [expr_text(e) for e in p.goal_numeric]
([('at', 't1', 'la')], ['(< (+ (fuel-used) 1) (fuel t1))'])
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from plansuite.errors import PDDLError
from plansuite.pddl.checks import raise_first
from plansuite.pddl.expressions import NEGATED, Expr, canonical, from_tree, is_comparison
from plansuite.pddl.model import Domain, Problem
from plansuite.pddl.parse import parse_problem
from plansuite.pddl.pddl21 import Reader, text_of
from plansuite.pddl.reader import Node, line_of, lower_ascii, read_text, scan

_SYNTAX = frozenset({"parse", "arity", "unsupported"})  # unreadable comparisons, checked or not


def load_problem21(path: str | Path, domain: Domain, *, check: bool = True) -> Problem:
    """:func:`parse_problem21` on a file."""
    return parse_problem21(read_text(path, "problem"), domain, str(path), check=check)


def parse_problem21(text: str, domain: Domain, source: str = "<problem>", *,
                    check: bool = True) -> Problem:
    """A problem of any domain, numeric goal comparisons included (module docstring)."""
    text = lower_ascii(text)
    goal = _goal(scan(text, source, "problem"))
    conjuncts = [] if goal is None else goal[1:] if goal.head() == "and" else [goal]
    numeric = [c for c in conjuncts if isinstance(c, Node) and (is_comparison(c) or (
        c.head() == "not" and len(c) == 2 and is_comparison(c[1])))]
    if not numeric:
        return parse_problem(text, domain, source, check=check)
    if not domain.function_types:
        first = numeric[0]
        raise PDDLError(f"{source}:{line_of(text, first.start)}", f"goal {text_of(first)}",
                        f"a numeric comparison, but domain '{domain.name}' declares no numeric "
                        "functions", kind="unsupported")
    blanked = text
    for node in numeric:  # spaces keep every offset, and newlines every line number
        span = "".join(ch if ch == "\n" else " " for ch in text[node.start:node.end])
        if node is goal:  # the whole goal is this comparison
            span = "(and)" + span[5:]
        blanked = blanked[:node.start] + span + blanked[node.end:]
    problem = parse_problem(blanked, domain, source, check=check)
    reader = Reader(domain, text, source, objects={**domain.constants, **problem.objects})
    goals = [_comparison(node, reader) for node in numeric]
    raise_first([d for d in reader.out if check or d.kind in _SYNTAX])
    return replace(problem, goal_numeric=frozenset(g for g in goals if g is not None))


def _goal(root: Node | None) -> Node | None:
    """The formula of ``(:goal ...)``; ``None`` when the file is not shaped so (``parse_problem``
    then names the syntax error)."""
    define = root[0] if root and len(root) == 1 and isinstance(root[0], Node) else None
    if define is None or define.head() != "define":
        return None
    for section in define[1:]:
        if isinstance(section, Node) and section.head() == ":goal" and len(section) == 2 \
                and isinstance(section[1], Node):
            return section[1]
    return None


def _comparison(node: Node, reader: Reader) -> Expr | None:
    """The canonical comparison of one goal conjunct; ``None`` after a diagnostic on ``reader``."""
    construct = f"goal {text_of(node)}"
    negated = node.head() == "not"
    inner = node[1] if negated else node
    if negated and inner[0] == "=":
        reader.add("unsupported", construct, "a negated numeric equality is not supported (write "
                   "the < or > goal it stands for)", node)
        return None
    if len(inner) != 3:
        reader.add("arity", construct, f"'{inner[0]}' compares two expressions, got "
                   f"{len(inner) - 1}", node)
        return None
    before = len(reader.out)
    for operand in inner[1:]:
        reader.expression(operand, construct, {})
    if any(d.kind in _SYNTAX for d in reader.out[before:]):
        return None
    head = NEGATED[inner[0]] if negated else inner[0]
    return canonical((head, *(from_tree(x) for x in inner[1:])))
