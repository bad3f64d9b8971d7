"""Semantic checks the ``pddl`` parser does not make, as located diagnostics.

Each check returns every problem it finds (the NL→PDDL repair loop feeds them back to a model);
loading a file raises the first one as a :class:`~plansuite.errors.PDDLError`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from plansuite.errors import PDDLError
from plansuite.pddl.model import ROOT_TYPE, Atom, Domain, Problem, atom_text


@dataclass(frozen=True)
class Diagnostic:
    """One located problem: ``kind`` is a stable machine-readable category."""

    kind: str  # undeclared-object | undeclared-predicate | undeclared-variable | arity | type |
    #            undeclared-type | undeclared-function | requirement | domain-name | duplicate
    source: str
    construct: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.construct}: {self.message}"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "construct": self.construct, "message": self.message,
                "line": self.line}


def raise_first(diagnostics: list[Diagnostic]) -> None:
    if diagnostics:
        d = diagnostics[0]
        source = f"{d.source}:{d.line}" if d.line else d.source
        raise PDDLError(source, d.construct, d.message, kind=d.kind)


def locate(text: str | None, atom: Atom) -> int | None:
    """1-based line of the first occurrence of ``atom`` in ``text`` (whitespace-insensitive).

    >>> locate("(define\\n (:init (on  a b)))", ("on", "a", "b"))
    2
    """
    if not text:
        return None
    pattern = r"\(\s*" + r"\s+".join(re.escape(p) for p in atom) + r"\s*\)"
    m = re.search(pattern, text, flags=re.IGNORECASE)
    return text.count("\n", 0, m.start()) + 1 if m else None


def check_domain(domain: Domain, text: str | None = None) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    src = domain.source
    declared_types = set(domain.types) | {ROOT_TYPE}
    reqs = domain.requirements
    uses_types = any(t != ROOT_TYPE for t in _all_declared_types(domain))
    if uses_types and ":typing" not in reqs:
        out.append(Diagnostic("requirement", src, "types", "types used without :typing requirement"))
    for t in sorted(_all_declared_types(domain) - declared_types):
        out.append(Diagnostic("undeclared-type", src, f"type {t}", "type not declared in :types"))
    for schema in domain.actions:
        where = f"action {schema.name}"
        params = dict(schema.parameters)
        if schema.pre_neg and ":negative-preconditions" not in reqs:
            out.append(Diagnostic("requirement", src, where,
                                  "negative precondition without :negative-preconditions"))
        if (schema.pre_eq or schema.pre_neq) and ":equality" not in reqs:
            out.append(Diagnostic("requirement", src, where, "equality used without :equality"))
        for x, y in schema.pre_eq + schema.pre_neq:
            for term in (x, y):
                if term.startswith("?") and term not in params:
                    out.append(Diagnostic("undeclared-variable", src, f"{where} (= {x} {y})",
                                          f"variable {term} is not a parameter"))
        parts = [("precondition", schema.pre_pos + schema.pre_neg), ("effect", schema.add + schema.delete)]
        for part, atoms in parts:
            for atom in atoms:
                out += check_atom(domain, atom, params, domain.constants, src,
                                   f"{where} {part} {atom_text(atom)}", locate(text, atom))
    return out


def check_problem(problem: Problem, domain: Domain, text: str | None = None) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    src = problem.source
    if problem.domain_name != domain.name:
        out.append(Diagnostic("domain-name", src, f"(:domain {problem.domain_name})",
                              f"problem is for domain '{problem.domain_name}', not '{domain.name}'"))
    declared_types = set(domain.types) | {ROOT_TYPE}
    for obj, typ in sorted(problem.objects.items()):
        if typ not in declared_types:
            out.append(Diagnostic("undeclared-type", src, f"object {obj}",
                                  f"type '{typ}' not declared in the domain"))
        if typ != ROOT_TYPE and ":typing" not in domain.requirements:
            out.append(Diagnostic("requirement", src, f"object {obj}",
                                  "typed object but the domain has no :typing"))
        if obj in domain.constants:
            out.append(Diagnostic("duplicate", src, f"object {obj}", "already a domain constant"))
    known = {**domain.constants, **problem.objects}
    for part, atoms in (("init", problem.init), ("goal", problem.goal_pos | problem.goal_neg)):
        for atom in sorted(atoms):
            out += check_atom(domain, atom, {}, known, src, f"{part} {atom_text(atom)}",
                               locate(text, atom))
    out += _check_functions(problem, domain, text)
    if problem.goal_neg and ":negative-preconditions" not in domain.requirements:
        out.append(Diagnostic("requirement", src, "goal",
                              "negative goal without :negative-preconditions"))
    return out


_METRIC_OPERATORS = {"+", "-", "*", "/", "total-time"}
ASSIGNMENTS = frozenset({"increase", "decrease", "assign", "scale-up", "scale-down"})


def _check_functions(problem: Problem, domain: Domain, text: str | None) -> list[Diagnostic]:
    """Every function given a value in ``:init`` or used by ``:metric`` is declared (with its
    arity and argument types in PDDL 2.1 domains), and every fluent an action updates has a value."""
    out = []
    known = {**domain.constants, **problem.objects}
    typed = bool(domain.function_types)  # STRIPS + action costs: names only
    for term in sorted(problem.fluents):
        name = term.strip("()").split()[0] if term.strip("()") else term
        construct, line = f"init (= {term} ...)", _line_of_term(text, term)
        if typed:
            out += check_function_term(domain, tuple(term.strip("()").split()), {}, known,
                                       problem.source, construct, line)
        elif name not in domain.functions:
            out.append(Diagnostic("undeclared-function", problem.source, construct,
                                  f"function '{name}' is not declared in the domain's :functions",
                                  line))
    metric = problem.metric or ""
    for inner in sorted(set(re.findall(r"\(\s*([^()]*?)\s*\)", metric))):
        term = tuple(inner.split())
        if not term or term[0] in _METRIC_OPERATORS:
            continue
        if typed:
            out += check_function_term(domain, term, {}, known, problem.source,
                                       f"(:metric {metric})", None)
        elif term[0] not in domain.functions:
            out.append(Diagnostic("undeclared-function", problem.source, f"(:metric {metric})",
                                  f"function '{term[0]}' is not declared in the domain's :functions"))
    if "total-time" in metric and domain.function_types and domain.level != "temporal":
        out.append(Diagnostic("metric", problem.source, f"(:metric {metric})",
                              "total-time is a temporal metric, the domain has no durative actions"))
    return out + _undefined_fluents(problem, domain)


def updated_functions(domain: Domain) -> frozenset[str]:
    """Functions an action changes or a duration reads: each ground instance over the problem's
    objects needs an initial value, or VAL and the planners meet an undefined fluent. (A fluent
    that is only *read* may be left undefined on purpose: the condition then never holds.)"""
    names: set[str] = set()
    for action in domain.actions21:
        texts = [t for _, t in action.effects if t.split(" ", 1)[0][1:] in ASSIGNMENTS]
        texts += [action.duration] if action.duration else []
        for text in texts:
            names |= set(re.findall(r"\(([^\s()]+)", text)) & set(domain.function_types)
    return frozenset(names)


def _undefined_fluents(problem: Problem, domain: Domain) -> list[Diagnostic]:
    objects = {**domain.constants, **problem.objects}
    out = []
    for name in sorted(updated_functions(domain)):
        choices = [sorted(o for o, t in objects.items() if domain.is_subtype(t, want))
                   for want in domain.function_types[name]]
        for args in itertools.product(*choices):
            term = "(" + " ".join((name, *args)) + ")"
            if term not in problem.fluents:
                out.append(Diagnostic("undefined-fluent", problem.source, f"init {term}",
                                      "no initial value (= ... v), but an action updates it or a "
                                      "duration reads it"))
    return out


def _line_of_term(text: str | None, term: str) -> int | None:
    inner = term.strip("()").split()
    return locate(text, tuple(inner)) if inner else None


def _all_declared_types(domain: Domain) -> set[str]:
    found = set(domain.types.values()) | set(domain.constants.values())
    for types in domain.predicates.values():
        found |= set(types)
    for schema in domain.actions:
        found |= {t for _, t in schema.parameters}
    return found


def check_atom(domain: Domain, atom: Atom, params: dict[str, str], objects: dict[str, str],
               src: str, construct: str, line: int | None) -> list[Diagnostic]:
    """Predicate declared, arity, every argument declared and of the parameter's type."""
    if atom[0] not in domain.predicates:
        return [Diagnostic("undeclared-predicate", src, construct,
                           f"predicate '{atom[0]}' is not declared", line)]
    return list(_check_args(domain, atom, domain.predicates[atom[0]], params, objects, src,
                            construct, line))


def check_function_term(domain: Domain, term: Atom, params: dict[str, str],
                        objects: dict[str, str], src: str, construct: str,
                        line: int | None) -> list[Diagnostic]:
    """The same for a function term ``(fuel t1)`` of a PDDL 2.1 domain."""
    if term[0] not in domain.function_types:
        return [Diagnostic("undeclared-function", src, construct,
                           f"function '{term[0]}' is not declared in the domain's :functions", line)]
    return list(_check_args(domain, term, domain.function_types[term[0]], params, objects, src,
                            construct, line))


def _check_args(domain: Domain, atom: Atom, expected: tuple[str, ...], params: dict[str, str],
                objects: dict[str, str], src: str, construct: str,
                line: int | None) -> Iterable[Diagnostic]:
    pred, args = atom[0], atom[1:]
    if len(args) != len(expected):
        yield Diagnostic("arity", src, construct,
                         f"'{pred}' takes {len(expected)} argument(s), got {len(args)}", line)
        return
    for i, (arg, want) in enumerate(zip(args, expected, strict=True), start=1):
        if arg.startswith("?"):
            if arg not in params:
                yield Diagnostic("undeclared-variable", src, construct,
                                 f"variable {arg} is not a parameter", line)
                continue
            have = params[arg]
        elif arg in objects:
            have = objects[arg]
        else:
            yield Diagnostic("undeclared-object", src, construct, f"object '{arg}' is not declared",
                             line)
            continue
        if not domain.is_subtype(have, want):
            yield Diagnostic("type", src, construct,
                             f"argument {i} of '{pred}' must be {want}, '{arg}' is {have}", line)
