"""Semantic checks the ``pddl`` parser does not make, as located diagnostics.

Each check returns every problem it finds (the NL→PDDL repair loop feeds them back to a model);
loading a file raises the first one as a :class:`~plansuite.errors.PDDLError`.
"""

from __future__ import annotations

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
                out += _check_atom(domain, atom, params, domain.constants, src,
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
            out += _check_atom(domain, atom, {}, known, src, f"{part} {atom_text(atom)}",
                               locate(text, atom))
    out += _check_functions(problem, domain, text)
    if problem.goal_neg and ":negative-preconditions" not in domain.requirements:
        out.append(Diagnostic("requirement", src, "goal",
                              "negative goal without :negative-preconditions"))
    return out


_METRIC_OPERATORS = {"+", "-", "*", "/", "total-time"}


def _check_functions(problem: Problem, domain: Domain, text: str | None) -> list[Diagnostic]:
    """Every function given a value in ``:init`` or used by ``:metric`` is declared."""
    out = []
    for term in sorted(problem.fluents):
        name = term.strip("()").split()[0] if term.strip("()") else term
        if name not in domain.functions:
            out.append(Diagnostic("undeclared-function", problem.source, f"init (= {term} ...)",
                                  f"function '{name}' is not declared in the domain's :functions",
                                  _line_of_term(text, term)))
    for name in sorted(set(re.findall(r"\(\s*([^\s()]+)", problem.metric or ""))):
        if name not in domain.functions and name not in _METRIC_OPERATORS:
            out.append(Diagnostic("undeclared-function", problem.source, f"(:metric {problem.metric})",
                                  f"function '{name}' is not declared in the domain's :functions"))
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


def _check_atom(domain: Domain, atom: Atom, params: dict[str, str], objects: dict[str, str],
                src: str, construct: str, line: int | None) -> Iterable[Diagnostic]:
    pred, args = atom[0], atom[1:]
    if pred not in domain.predicates:
        yield Diagnostic("undeclared-predicate", src, construct, f"predicate '{pred}' is not declared",
                         line)
        return
    expected = domain.predicates[pred]
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
