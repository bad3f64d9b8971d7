"""Offline equivalence of a generated problem with its reference (never used inside the loop).

*Structural*: same typed objects, ``:init``, ``:goal``, numeric fluents and ``:metric`` under a
bijection between generated and reference objects — the identity first, a graph-isomorphism
search only when it fails. Order, whitespace and comments never matter (we compare parsed sets).

*Semantic* (any STRIPS domain: Blocksworld and Gripper through their hand-written models, the
rest through :mod:`~plansuite.nl2pddl.general_semantics`; undecided, with that reason, for PDDL 2.1
numeric and temporal domains, where goal states also depend on numeric values reached by plans):
same initial state and same set of goal states under one bijection. Goals are first completed
with every literal they imply
(:func:`~plansuite.nl2pddl.worlds.implied_literals`), so an under-specified but equivalent goal
matches, and a subtly different one does not.

``mapping`` always reads generated object → reference object.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plansuite.errors import PDDLError
from plansuite.nl2pddl.general_semantics import general_semantic
from plansuite.nl2pddl.graphs import find_mapping, problem_graph
from plansuite.nl2pddl.worlds import SearchBudgetExceeded, implied_literals, world_for
from plansuite.pddl.checks import check_problem
from plansuite.pddl.model import Domain, Problem, atom_text
from plansuite.pddl.parse import parse_problem, read_text

COMMUTATIVE = {"+", "*"}


@dataclass(frozen=True)
class Verdict:
    equivalent: bool | None  # None: could not be decided (e.g. no semantic model for the domain)
    mapping: dict[str, str] | None = None
    reason: str = ""


@dataclass
class Comparison:
    """What ``plansuite-equiv`` prints."""

    parse: bool
    structural: bool | None
    semantic: bool | None
    mapping: dict[str, str] | None
    reasons: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


# ---- metric -----------------------------------------------------------------------------------
def _tokens(text: str) -> list[str]:
    return re.findall(r"\(|\)|[^\s()]+", text.lower())


def _tree(tokens: list[str]):
    token = tokens.pop(0)
    if token != "(":
        return token
    items = []
    while tokens and tokens[0] != ")":
        items.append(_tree(tokens))
    if tokens:
        tokens.pop(0)
    return tuple(items)


def _canon_expr(node, rename: dict[str, str]):
    if isinstance(node, str):
        try:
            return repr(float(node))
        except ValueError:
            return rename.get(node, node)
    items = [_canon_expr(n, rename) if i else n for i, n in enumerate(node)]
    if items and items[0] in COMMUTATIVE:
        items = [items[0], *sorted(items[1:], key=str)]
    return tuple(items)


def canonical_metric(metric: str | None, rename: dict[str, str] | None = None):
    """Direction and normalised expression; ``rename`` maps object names first.

    >>> canonical_metric("minimize (+ (total-cost) (* 2 (w a)))", {"a": "b"})
    ('minimize', ('+', ('*', ('w', 'b'), '2.0'), ('total-cost',)))
    >>> canonical_metric("MINIMIZE (+ (w b) (total-cost))") == canonical_metric("minimize (+ (total-cost) (w b))")
    True
    """
    if metric is None:
        return None
    tokens = _tokens(metric)
    direction = tokens.pop(0) if tokens and tokens[0] != "(" else ""
    return direction, _canon_expr(_tree(tokens), rename or {}) if tokens else None


# ---- structural -------------------------------------------------------------------------------
def _sections(problem: Problem, goal_pos=None, goal_neg=None) -> dict:
    return {"init": problem.init, "goal": problem.goal_pos if goal_pos is None else goal_pos,
            "goal-not": problem.goal_neg if goal_neg is None else goal_neg}


def _same_under_identity(ref: Problem, gen: Problem) -> bool:
    return (ref.objects == gen.objects and ref.init == gen.init and ref.goal_pos == gen.goal_pos
            and ref.goal_neg == gen.goal_neg and ref.fluents == gen.fluents
            and canonical_metric(ref.metric) == canonical_metric(gen.metric))


def _first_difference(ref: Problem, gen: Problem) -> str:
    """A readable reason for a structural mismatch (counts first, then identity-level facts)."""
    def types(p):
        return sorted((t, sum(1 for x in p.objects.values() if x == t)) for t in set(p.objects.values()))

    if types(ref) != types(gen):
        return f"object counts by type differ: reference {types(ref)}, generated {types(gen)}"
    for name, r, g in (("init", ref.init, gen.init), ("goal", ref.goal_pos, gen.goal_pos),
                       ("negative goal", ref.goal_neg, gen.goal_neg)):
        if len(r) != len(g):
            return f"{name} has {len(g)} atoms, reference has {len(r)}"
        if ref.objects == gen.objects and r != g:
            missing, extra = sorted(r - g), sorted(g - r)
            detail = [f"missing {atom_text(missing[0])}"] if missing else []
            detail += [f"unexpected {atom_text(extra[0])}"] if extra else []
            return f"{name} differs ({', '.join(detail)}) and no renaming fixes it"
    if set(ref.fluents) != set(gen.fluents) and len(ref.fluents) != len(gen.fluents):
        return f"{len(gen.fluents)} numeric fluent values, reference has {len(ref.fluents)}"
    if sorted(ref.fluents.values()) != sorted(gen.fluents.values()):
        changed = sorted(t for t in set(ref.fluents) & set(gen.fluents)
                         if ref.fluents[t] != gen.fluents[t])
        where = f" (e.g. {changed[0]}: {gen.fluents[changed[0]]:g}, reference {ref.fluents[changed[0]]:g})" \
            if changed and ref.objects == gen.objects else ""
        return f"numeric fluent values differ{where}"
    if (canonical_metric(ref.metric) or ("",))[0] != (canonical_metric(gen.metric) or ("",))[0]:
        return f"metric direction differs: {ref.metric!r} vs {gen.metric!r}"
    if ref.fluents == gen.fluents and canonical_metric(ref.metric) != canonical_metric(gen.metric):
        return f"metric differs: {ref.metric!r} vs {gen.metric!r}"
    return "no renaming of objects makes the problems identical"


def _match(ref: Problem, gen: Problem, ref_sections: dict, gen_sections: dict) -> dict | None:
    """A renaming under which sections, fluents and metric all coincide."""
    def metric_ok(mapping: dict[str, str]) -> bool:
        return canonical_metric(gen.metric, mapping) == canonical_metric(ref.metric)

    return find_mapping(problem_graph(ref.objects, ref_sections, ref.fluents),
                        problem_graph(gen.objects, gen_sections, gen.fluents), metric_ok)


def structural(ref: Problem, gen: Problem) -> Verdict:
    if gen.domain_name != ref.domain_name:  # same facts, but a problem of another domain
        return Verdict(False, None, f"generated problem is for domain '{gen.domain_name}', the "
                                    f"reference for '{ref.domain_name}'")
    if _same_under_identity(ref, gen):
        return Verdict(True, {o: o for o in gen.objects})
    mapping = _match(ref, gen, _sections(ref), _sections(gen))
    if mapping is not None:
        return Verdict(True, mapping)
    return Verdict(False, None, _first_difference(ref, gen))


# ---- semantic ---------------------------------------------------------------------------------
def semantic_sections(problem: Problem, domain: Domain, negatives: bool) -> dict | None:
    """``init`` and the completed goal; ``None`` if the goal holds in no valid state.

    For goals without negative literals the implied *positive* facts already determine the set of
    goal states, so the (many) implied negative facts are only added when ``negatives`` is set.
    """
    completed = implied_literals(world_for(domain), problem.objects, problem.goal_pos, problem.goal_neg)
    if completed is None:
        return None
    return _sections(problem, completed[0], completed[1] if negatives else frozenset())


NOT_DECIDED_21 = ("semantic equivalence does not decide {level} (PDDL 2.1) problems: which numeric "
                  "values and durations lead to the same goal states is not modelled; see the "
                  "structural verdict")


def semantic(ref: Problem, gen: Problem, domain: Domain) -> Verdict:
    """The Blocksworld / Gripper model when it applies and decides, else the domain-general
    method (:mod:`plansuite.nl2pddl.general_semantics`); PDDL 2.1 domains stay undecided."""
    if domain.level != "classical":
        return Verdict(None, None, NOT_DECIDED_21.format(level=domain.level))
    verdict = _model_semantic(ref, gen, domain) if world_for(domain) else None
    if verdict is None or verdict.equivalent is None:
        return Verdict(*general_semantic(ref, gen, domain, _match))
    return verdict


def _model_semantic(ref: Problem, gen: Problem, domain: Domain) -> Verdict:
    issues = check_problem(gen, domain)
    if issues:
        return Verdict(False, None, f"generated problem is not domain-consistent: {issues[0]}")
    negatives = bool(ref.goal_neg or gen.goal_neg)
    try:
        ref_sections = semantic_sections(ref, domain, negatives)
        gen_sections = semantic_sections(gen, domain, negatives)
    except SearchBudgetExceeded as exc:
        return Verdict(None, None, f"goal completion gave up: {exc}")
    if ref_sections is None:
        return Verdict(None, None, "reference goal is unsatisfiable")
    if gen_sections is None:
        return Verdict(False, None, "generated goal cannot hold in any valid state")
    if (ref.objects == gen.objects and ref_sections == gen_sections and ref.fluents == gen.fluents
            and canonical_metric(ref.metric) == canonical_metric(gen.metric)):
        return Verdict(True, {o: o for o in gen.objects})
    mapping = _match(ref, gen, ref_sections, gen_sections)
    if mapping is None:
        return Verdict(False, None, "initial states or completed goals differ under every renaming")
    return Verdict(True, mapping)


# ---- front door -------------------------------------------------------------------------------
def compare(reference: Problem, generated_text: str, domain: Domain,
            generated_source: str = "<generated>") -> Comparison:
    """Parse the generated text and compare it with the (already parsed) reference."""
    try:
        gen = parse_problem(generated_text, domain, source=generated_source, check=False)
    except PDDLError as exc:
        return _unparsed(exc, domain)
    s, m = structural(reference, gen), semantic(reference, gen, domain)
    reasons = {k: v.reason for k, v in (("structural", s), ("semantic", m)) if v.reason}
    return Comparison(True, s.equivalent, m.equivalent, s.mapping or m.mapping, reasons)


def compare_file(reference: Problem, generated_file: str | Path, domain: Domain) -> Comparison:
    """:func:`compare` on a file. A missing or unreadable file is an error; a file whose content
    cannot be PDDL text (not UTF-8, over the size limit) is a generation that does not parse."""
    try:
        text = read_text(generated_file, "problem")
    except PDDLError as exc:
        if exc.kind == "io":
            raise
        return _unparsed(exc, domain)
    return compare(reference, text, domain, str(generated_file))


def _unparsed(exc: PDDLError, domain: Domain) -> Comparison:
    return Comparison(False, False, False, None, {"parse": str(exc)})
