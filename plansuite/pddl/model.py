"""Plain, immutable data for STRIPS domains and problems (no parser, no torch).

An atom is a tuple ``(predicate, arg1, ...)``; in action schemas, arguments that start with
``?`` are parameters, the others constants. The canonical text of an atom is ``(on b1 b3)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from plansuite.pddl.expressions import Expr, canonical, expr_text, number_text, rename

Atom = tuple[str, ...]

ROOT_TYPE = "object"


def atom_text(atom: Atom) -> str:
    """Canonical text of an atom or ground action.

    >>> atom_text(("on", "b1", "b3"))
    '(on b1 b3)'
    >>> atom_text(("arm-empty",))
    '(arm-empty)'
    """
    return "(" + " ".join(atom) + ")"


def parse_atom_text(text: str) -> Atom | None:
    """Inverse of :func:`atom_text`; ``None`` when ``text`` is not one flat atom.

    >>> parse_atom_text("(on  b1 b3)")
    ('on', 'b1', 'b3')
    >>> parse_atom_text("on b1") is None
    True
    """
    text = text.strip()
    if len(text) < 3 or text[0] != "(" or text[-1] != ")":
        return None
    parts = text[1:-1].split()
    if not parts or any("(" in p or ")" in p for p in parts):
        return None
    return tuple(p.lower() for p in parts)


@dataclass(frozen=True)
class Schema:
    """A STRIPS action schema: conjunctive preconditions (positive, negative, (in)equality)."""

    name: str
    parameters: tuple[tuple[str, str], ...]  # (?var, type)
    pre_pos: tuple[Atom, ...] = ()
    pre_neg: tuple[Atom, ...] = ()
    pre_eq: tuple[tuple[str, str], ...] = ()
    pre_neq: tuple[tuple[str, str], ...] = ()
    add: tuple[Atom, ...] = ()
    delete: tuple[Atom, ...] = ()


@dataclass(frozen=True)
class Action21:
    """A PDDL 2.1 action (instantaneous with numeric parts, or durative), kept as checked text.

    The suite never simulates these (the numeric and temporal planners and VAL read the files);
    it keeps what checks, equivalence and tests need: canonical s-expressions of each part.
    """

    name: str
    parameters: tuple[tuple[str, str], ...]  # (?var, type)
    duration: str | None = None  # "(= ?duration (move-time ?r))"; None: not durative
    conditions: tuple[tuple[str, str], ...] = ()  # (when, text); when: "" | at start | ...
    effects: tuple[tuple[str, str], ...] = ()

    @property
    def durative(self) -> bool:
        return self.duration is not None


@dataclass(frozen=True)
class Domain:
    name: str
    requirements: frozenset[str]
    types: dict[str, str]  # type -> parent type; ROOT_TYPE has no entry
    constants: dict[str, str]  # constant -> type
    predicates: dict[str, tuple[str, ...]]  # name -> parameter types
    actions: tuple[Schema, ...]
    source: str = "<domain>"
    functions: frozenset[str] = frozenset()  # names declared in (:functions ...)
    # PDDL 2.1 only: each function's parameter types, and the actions (then ``actions`` is empty,
    # so no STRIPS tool can mistake a numeric or temporal domain for one without actions).
    function_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    actions21: tuple[Action21, ...] = ()

    @property
    def level(self) -> str:
        """``temporal`` (durative actions), ``numeric`` (numeric fluents) or ``classical``."""
        if any(a.durative for a in self.actions21):
            return "temporal"
        return "numeric" if self.actions21 else "classical"

    def subtypes(self, type_name: str) -> set[str]:
        """``type_name`` and every type below it."""
        found = {type_name}
        changed = True
        while changed:
            changed = False
            for child, parent in self.types.items():
                if parent in found and child not in found:
                    found.add(child)
                    changed = True
        return found

    def is_subtype(self, child: str, ancestor: str) -> bool:
        seen = set()
        while child not in seen:
            if child == ancestor or ancestor == ROOT_TYPE:
                return True
            seen.add(child)
            if child not in self.types:
                return False
            child = self.types[child]
        return False


@dataclass(frozen=True)
class Problem:
    name: str
    domain_name: str
    objects: dict[str, str]  # object -> type
    init: frozenset[Atom]
    goal_pos: frozenset[Atom]
    goal_neg: frozenset[Atom] = frozenset()
    requirements: frozenset[str] = frozenset()
    source: str = "<problem>"
    # Numeric fluents in :init, keyed by canonical term text, e.g. {"(total-cost)": 0.0}.
    fluents: dict[str, float] = field(default_factory=dict)
    metric: str | None = None  # canonical, e.g. "minimize (total-cost)"
    # PDDL 2.1 goal comparisons in canonical form (:mod:`.expressions`), e.g.
    # ("<=", ("+", ("value", "c0"), "1"), ("value", "c1")); read by :mod:`.numeric_goals`.
    goal_numeric: frozenset[Expr] = frozenset()


def rename_atoms(atoms: Iterable[Atom], mapping: dict[str, str]) -> frozenset[Atom]:
    """``atoms`` with their arguments renamed by ``mapping`` (names not in it stay).

    >>> sorted(rename_atoms({("on", "a", "b"), ("clear", "a")}, {"a": "c"}))
    [('clear', 'c'), ('on', 'c', 'b')]
    """
    return frozenset((a[0], *(mapping.get(x, x) for x in a[1:])) for a in atoms)


def rename_problem(problem: Problem, mapping: dict[str, str]) -> Problem:
    """``problem`` with its objects renamed by ``mapping``, a bijection of its objects (fluent
    values and the metric are not renamed; numeric goals are).

    >>> p = Problem("p", "d", {"a": "ball", "b": "ball"}, frozenset({("at", "a", "r")}), frozenset({("at", "b", "r")}))
    >>> q = rename_problem(p, {"a": "b", "b": "a"})
    >>> sorted(q.init), sorted(q.goal_pos), q.objects == p.objects
    ([('at', 'b', 'r')], [('at', 'a', 'r')], True)
    """
    return replace(problem, objects={mapping.get(o, o): t for o, t in problem.objects.items()},
                   init=rename_atoms(problem.init, mapping), goal_pos=rename_atoms(problem.goal_pos, mapping),
                   goal_neg=rename_atoms(problem.goal_neg, mapping),
                   goal_numeric=frozenset(canonical(rename(e, mapping)) for e in problem.goal_numeric))


def _schema_structure(schema: Schema) -> tuple:
    """A schema with its parameters renamed by position (``?0``, ``?1``, ...), parts sorted."""
    names = {var: f"?{i}" for i, (var, _) in enumerate(schema.parameters)}

    def atoms(part: tuple[Atom, ...]) -> tuple[Atom, ...]:
        return tuple(sorted((a[0], *(names.get(x, x) for x in a[1:])) for a in part))

    def pairs(part: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], ...]:
        return tuple(sorted(tuple(sorted(names.get(x, x) for x in pair)) for pair in part))

    return (tuple(t for _, t in schema.parameters), atoms(schema.pre_pos), atoms(schema.pre_neg),
            pairs(schema.pre_eq), pairs(schema.pre_neq), atoms(schema.add), atoms(schema.delete))


def _action21_structure(action: Action21) -> tuple:
    """A PDDL 2.1 action's parts with its parameters renamed by position (in the texts too)."""
    names = {var: f"?{i}" for i, (var, _) in enumerate(action.parameters)}

    def text(value: str | None) -> str | None:
        return None if value is None else re.sub(r"\?[^\s()]+", lambda m: names.get(m[0], m[0]),
                                                 value)

    return (tuple(t for _, t in action.parameters), text(action.duration),
            tuple(sorted((w, text(c)) for w, c in action.conditions)),
            tuple(sorted((w, text(e)) for w, e in action.effects)))


def domain_structure(domain: Domain) -> dict[str, dict]:
    """What a model trained on ``domain`` depends on, by part: types, constants, predicates with
    their parameter types, and every action's parameter types, preconditions and effects, up to
    renaming of parameters. The domain's name, its requirements and parameter names do not count.

    >>> a = Domain("a", frozenset(), {}, {}, {"p": ("object",)},
    ...            (Schema("go", (("?x", "object"),), pre_pos=(("p", "?x"),)),))
    >>> b = Domain("b", frozenset(), {}, {}, {"p": ("object",)},
    ...            (Schema("go", (("?y", "object"),), pre_pos=(("p", "?y"),)),))
    >>> domain_structure(a) == domain_structure(b)
    True
    """
    return {"types": dict(sorted(domain.types.items())),
            "constants": dict(sorted(domain.constants.items())),
            "predicates": dict(sorted(domain.predicates.items())),
            "functions": dict(sorted(domain.function_types.items())),
            "actions": {s.name: _schema_structure(s) for s in sorted(domain.actions, key=lambda s: s.name)}
            | {a.name: _action21_structure(a) for a in sorted(domain.actions21, key=lambda a: a.name)}}


def structure_difference(a: Domain, b: Domain, labels: tuple[str, str] = ("first", "second")) -> str | None:
    """``None`` when ``a`` and ``b`` have the same :func:`domain_structure`, else the first part
    that differs, in words: the entries only one of them has, or those that differ.

    >>> one = Domain("bw", frozenset(), {}, {}, {"on-table": ("object",), "arm-empty": ()}, ())
    >>> two = Domain("bw", frozenset(), {}, {}, {"ontable": ("object",), "arm-empty": ()}, ())
    >>> structure_difference(one, two, ("the export's", "this one"))
    "predicates differ: on-table/1 only in the export's; ontable/1 only in this one"
    >>> structure_difference(one, one) is None
    True
    """
    sa, sb = domain_structure(a), domain_structure(b)
    for part in sa:
        x, y = sa[part], sb[part]
        if x == y:
            continue

        def entry(name: str, value, part: str = part) -> str:
            return f"{name}/{len(value)}" if part == "predicates" else name

        only = [", ".join(entry(n, v) for n, v in one.items() if n not in other)
                for one, other in ((x, y), (y, x))]
        said = [f"{text} only in {label}" for text, label in zip(only, labels, strict=True) if text]
        changed = ", ".join(entry(n, v) for n, v in x.items() if n in y and y[n] != v)
        if changed:
            said.append(f"{changed} not the same in both")
        return f"{part} differ: " + "; ".join(said)
    return None


def problem_to_pddl(problem: Problem, domain: Domain | None = None) -> str:
    """Canonical PDDL text of a problem: sorted objects and atoms, one atom per line.

    Types are written only when the domain uses ``:typing``.
    """
    typed = domain is not None and ":typing" in domain.requirements
    if typed:
        by_type: dict[str, list[str]] = {}
        for obj, typ in sorted(problem.objects.items()):
            by_type.setdefault(typ, []).append(obj)
        objects = " ".join(f"{' '.join(objs)} - {typ}" for typ, objs in sorted(by_type.items()))
    else:
        objects = " ".join(sorted(problem.objects))
    goal = sorted(atom_text(a) for a in problem.goal_pos)
    goal += sorted(f"(not {atom_text(a)})" for a in problem.goal_neg)
    goal += sorted(map(expr_text, problem.goal_numeric))
    lines = [
        f"(define (problem {problem.name})",
        f"  (:domain {problem.domain_name})",
        f"  (:objects {objects})",
        "  (:init",
        *(f"    {t}" for t in _sorted_texts(problem.init)),
        *(f"    (= {term} {number_text(v)})" for term, v in sorted(problem.fluents.items())),
        "  )",
        "  (:goal (and",
        *(f"    {t}" for t in goal),
        "  ))",
        *([f"  (:metric {problem.metric})"] if problem.metric else []),
        ")",
    ]
    return "\n".join(lines) + "\n"


def _sorted_texts(atoms: Iterable[Atom]) -> list[str]:
    return sorted(atom_text(a) for a in atoms)
