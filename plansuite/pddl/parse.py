"""Read PDDL domains and problems with the ``pddl`` package into :mod:`plansuite.pddl.model`.

Every text first passes :mod:`plansuite.pddl.reader` (case folded to lower case once, size and
nesting bounded, duplicates and ``:derived`` rejected). The parser does the syntax;
:mod:`plansuite.pddl.checks` does the semantics it lacks. Domains with numeric fluents or
durative actions go to :mod:`plansuite.pddl.pddl21`. Anything else outside STRIPS + typing +
constants + negative preconditions + equality is rejected here with one line naming the file and
the construct, so nothing is ever mis-simulated.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

from plansuite.errors import ConfigError, PDDLError, clip
from plansuite.pddl.model import ROOT_TYPE, Atom, Domain, Problem, Schema
from plansuite.pddl.reader import prepare_domain, prepare_problem, read_text

__all__ = ["load_domain", "load_problem", "parse_domain", "parse_problem", "problem_files", "read_text"]

_IGNORED_REQUIREMENTS = {":action-costs"}  # unit costs: (increase (total-cost) n) is ignored


@functools.cache
def _parsers():
    # Building a parser costs ~100 ms (grammar compilation): build each once per process.
    from pddl.parser.domain import DomainParser, DomainTransformer
    from pddl.parser.problem import ProblemParser

    class ObjectAsUntyped(DomainTransformer):
        """Reads a ``- object`` tag as no tag: ``pddl`` 0.5.1 rejects the (standard) explicit
        ``?x - object`` in a domain ("not in available types") but accepts an untyped name, which
        is an object. Done per typed group, so ``?x - object ?p - place`` keeps ``?p`` a place
        (deleting the tag from the text would make ``?x`` a place too)."""

        def typed_list_name(self, args):
            return {n: _untagged(t) for n, t in super().typed_list_name(args).items()}

        def typed_list_variable(self, args):
            return tuple((n, _untagged(t)) for n, t in super().typed_list_variable(args))

    class Domains(DomainParser):
        transformer_cls = ObjectAsUntyped

    return Domains(), ProblemParser()


def _untagged(tag):
    """``None`` (or no tags) for the root type ``object``, ``tag`` otherwise; an ``either`` naming
    ``object`` among others is kept, so it is still refused as unsupported.

    >>> _untagged("object"), _untagged({"object"}), _untagged({"object", "ball"}) == {"object", "ball"}
    (None, set(), True)
    >>> _untagged("ball"), _untagged(None)
    ('ball', None)
    """
    if tag is None or isinstance(tag, str):
        return None if tag == ROOT_TYPE else tag
    return set() if set(tag) == {ROOT_TYPE} else tag


def load_domain(path: str | Path, *, check: bool = True) -> Domain:
    """Parse and (by default) semantically check a domain file."""
    return parse_domain(read_text(path, "domain"), source=str(path), check=check)


def load_problem(path: str | Path, domain: Domain, *, check: bool = True) -> Problem:
    """Parse a problem file and check it against ``domain``."""
    return parse_problem(read_text(path, "problem"), domain, source=str(path), check=check)


def problem_files(folder: str | Path) -> list[Path]:
    """The ``*.pddl`` problems of ``folder`` by name (a file named ``domain.pddl`` is skipped);
    one ConfigError line when the folder is missing or holds none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: instance folder not found")
    files = sorted(f for f in folder.glob("*.pddl") if f.stem != "domain")
    if not files:
        raise ConfigError(f"{folder}: no problem files (*.pddl)")
    return files


def parse_domain(text: str, source: str = "<domain>", *, check: bool = True) -> Domain:
    """A STRIPS domain through ``pddl``; a numeric or temporal one through :mod:`.pddl21`."""
    from plansuite.pddl.pddl21 import needs_pddl21, parse_domain21

    if needs_pddl21(text, source):
        return parse_domain21(text, source, check=check)
    prepared = prepare_domain(text, source)
    raw = _syntax(lambda: _fresh(_parsers()[0])(prepared.text), source, "domain",
                  prepared.text)
    domain = Domain(
        name=raw.name.lower(),
        requirements=frozenset(str(r) for r in raw.requirements),
        types=_type_parents(raw.types),
        constants={c.name: _one_type(c.type_tags, source, f"constant {c.name}")
                   for c in _written_order(raw.constants, prepared.text, ":constants")},
        predicates={
            p.name: tuple(_one_type(v.type_tags, source, f"predicate {p.name}") for v in p.terms)
            for p in _written_order(raw.predicates, prepared.text, ":predicates")
        },
        actions=tuple(_schema(a, source) for a in sorted(raw.actions, key=lambda a: a.name)),
        source=source,
        functions=prepared.functions,
    )
    unsupported = domain.requirements - {":strips", ":typing", ":negative-preconditions", ":equality"}
    if unsupported - _IGNORED_REQUIREMENTS:
        req = sorted(unsupported - _IGNORED_REQUIREMENTS)[0]
        raise PDDLError(source, f"requirement {req}", "not supported (STRIPS, typing, "
                        "negative preconditions and equality only)", kind="unsupported")
    if check:
        from plansuite.pddl.checks import check_domain, raise_first

        raise_first(check_domain(domain, text))
    return domain


def parse_problem(text: str, domain: Domain, source: str = "<problem>", *, check: bool = True) -> Problem:
    prepared = prepare_problem(text, source)
    raw = _syntax(lambda: _fresh(_parsers()[1])(prepared.text), source, "problem",
                  prepared.text)
    init, fluents = [], {}
    for fact in raw.init:
        if _kind(fact) == "Predicate":
            init.append(_atom(fact))
        elif _kind(fact) == "EqualTo" and hasattr(fact, "operands"):  # (= (f ...) value)
            term, value = fact.operands
            fluents[_canon(str(term))] = float(str(value.value if hasattr(value, "value") else value))
        else:
            raise PDDLError(source, f"init fact {fact}", "not supported", kind="unsupported")
    goal_pos, goal_neg = _literals(raw.goal, source, "goal")
    metric = None
    if raw.metric is not None:
        metric = _canon(str(raw.metric))
    problem = Problem(
        name=raw.name.lower(),
        domain_name=raw.domain_name.lower(),
        objects={o.name: _one_type(o.type_tags, source, f"object {o.name}")
                 for o in _written_order(raw.objects, prepared.text, ":objects")},
        init=frozenset(init),
        goal_pos=frozenset(goal_pos),
        goal_neg=frozenset(goal_neg),
        requirements=frozenset(str(r) for r in raw.requirements),
        source=source,
        fluents=fluents,
        metric=metric,
    )
    if check:
        from plansuite.pddl.checks import check_problem, raise_first

        raise_first(check_problem(problem, domain, text))
    return problem


def _written_order(names, text: str, section: str) -> list:
    """``names`` (``pddl`` terms, which it keeps in sets) in the order ``section`` declares them:
    a set's order changes with ``PYTHONHASHSEED``, and the order of a problem's objects or a
    domain's predicates reaches every choice made by walking them.

    >>> class T(str):
    ...     name = property(str.__str__)
    >>> [t.name for t in _written_order({T("b"), T("a"), T("c")}, "(:objects c a - x b)", ":objects")]
    ['c', 'a', 'b']
    """
    lowered = text.lower()
    start = lowered.find(section)
    body = lowered[start:] if start >= 0 else ""
    where = {}
    for m in re.finditer(r"[^\s()]+", body):
        where.setdefault(m.group(0), m.start())
    return sorted(names, key=lambda n: (where.get(n.name.lower(), len(body)), n.name))


def _type_parents(raw_types) -> dict[str, str]:
    """type -> parent; a parent named only after ``-`` (``room hall - place``) is declared too."""
    types = {str(t): str(p) if p else ROOT_TYPE for t, p in raw_types.items()}
    for parent in set(types.values()) - set(types) - {ROOT_TYPE}:
        types[parent] = ROOT_TYPE
    return types


def _canon(text: str) -> str:
    """Lower-case, single-spaced s-expression text (order of tokens kept)."""
    text = re.sub(r"\s+", " ", text.lower()).strip()
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


def _fresh(parser):
    """``parser`` with the state of its transformer reset.

    The ``pddl`` transformers keep per-file state (types, constants, requirements, objects) between
    calls and only clear part of it on success: a failed parse leaves the parser unusable ("parser
    is in an unexpected state"), and a file without ``:requirements`` or ``:constants`` would
    inherit the previous file's. Resetting costs about a microsecond; rebuilding the grammar ~100 ms.
    """
    transformer = parser._transformer
    transformer.__dict__.clear()
    transformer.__dict__.update(type(transformer)().__dict__)
    return parser


def _line_of(text: str, name: str) -> int | None:
    """1-based line of the first use of ``name`` as a term (not ``?name``, not inside a longer name)."""
    m = re.search(rf"(?<![\w?-]){re.escape(name)}(?![\w-])", text, flags=re.IGNORECASE)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _syntax(parse, source: str, what: str, text: str = ""):
    """Run the ``pddl`` parser; turn its many exception types into one PDDLError line."""
    # pddl sets sys.tracebacklimit = 0 while parsing and leaves it there when parsing fails.
    limit = getattr(sys, "tracebacklimit", None)
    try:
        return parse()
    except RecursionError as exc:
        raise PDDLError(source, what, "nesting too deep", kind="parse") from exc
    except Exception as exc:  # lark and pddl raise many types; all mean "cannot read this file"
        line = getattr(exc, "line", None)
        column = getattr(exc, "column", None)
        where = f"{what} (line {line}, column {column})" if line and line > 0 else what
        name = type(exc).__name__
        if name.startswith("Unexpected"):
            token = getattr(exc, "token", None) or getattr(exc, "char", None)
            message = (f"syntax error near {clip(str(token))!r}" if token
                       else "syntax error (unexpected end of input)")
        else:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else name
        kind = "requirement" if "requirement" in f"{name} {message}".lower() else "parse"
        constant = re.fullmatch(r"Constant '(.+)' not defined\.", message)
        if constant:  # pddl checks the constants of a domain itself; say it like checks.py does
            line = _line_of(text, constant.group(1))
            source, where = (f"{source}:{line}" if line else source), f"constant {constant.group(1)}"
            message, kind = f"object '{constant.group(1)}' is not declared", "undeclared-object"
        raise PDDLError(source, where, message, kind=kind) from exc
    finally:
        if limit is None:
            sys.__dict__.pop("tracebacklimit", None)
        else:
            sys.tracebacklimit = limit


def _kind(node) -> str:
    return type(node).__name__


def _one_type(tags, source: str, construct: str) -> str:
    tags = sorted(str(t) for t in tags)
    if len(tags) > 1:
        raise PDDLError(source, construct, f"'either' types ({' '.join(tags)}) not supported",
                        kind="unsupported")
    return tags[0] if tags else ROOT_TYPE


def _term(term) -> str:
    return f"?{term.name}" if _kind(term) == "Variable" else term.name


def _atom(pred) -> Atom:
    return (pred.name, *(_term(t) for t in pred.terms))


def _conjuncts(formula) -> list:
    if formula is None:
        return []
    if _kind(formula) == "And":
        return list(formula.operands)
    return [formula]


def _literals(formula, source: str, construct: str):
    pos: list[Atom] = []
    neg: list[Atom] = []
    for lit in _conjuncts(formula):
        if _kind(lit) == "Predicate":
            pos.append(_atom(lit))
        elif _kind(lit) == "Not" and _kind(lit.argument) == "Predicate":
            neg.append(_atom(lit.argument))
        else:
            raise PDDLError(source, f"{construct} {lit}", "only conjunctions of literals are supported",
                            kind="unsupported")
    return pos, neg


def _schema(action, source: str) -> Schema:
    where = f"action {action.name}"
    pos, neg, eq, neq = [], [], [], []
    for lit in _conjuncts(action.precondition):
        kind = _kind(lit)
        inner = lit.argument if kind == "Not" else None
        if kind == "Predicate":
            pos.append(_atom(lit))
        elif kind == "EqualTo":
            eq.append((_term(lit.left), _term(lit.right)))
        elif inner is not None and _kind(inner) == "Predicate":
            neg.append(_atom(inner))
        elif inner is not None and _kind(inner) == "EqualTo":
            neq.append((_term(inner.left), _term(inner.right)))
        else:
            raise PDDLError(source, f"{where} precondition {lit}",
                            "only conjunctions of literals and (in)equalities are supported",
                            kind="unsupported")
    add, delete = [], []
    for eff in _conjuncts(action.effect):
        kind = _kind(eff)
        if kind == "Predicate":
            add.append(_atom(eff))
        elif kind == "Not" and _kind(eff.argument) == "Predicate":
            delete.append(_atom(eff.argument))
        elif kind == "Increase" and "total-cost" in str(eff):
            continue  # unit-cost semantics
        else:
            raise PDDLError(source, f"{where} effect {eff}",
                            "only add/delete effects are supported (no conditional, quantified or "
                            "numeric effects)", kind="unsupported")
    params = tuple(
        (f"?{v.name}", _one_type(v.type_tags, source, f"{where} parameter ?{v.name}"))
        for v in action.parameters
    )
    return Schema(action.name, params, tuple(pos), tuple(neg), tuple(eq), tuple(neq),
                  tuple(add), tuple(delete))
