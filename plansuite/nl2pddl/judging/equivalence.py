"""Offline equivalence of a generated problem with its reference (never used inside the loop).

*Structural*: same typed objects, ``:init``, ``:goal`` (literals and numeric comparisons),
numeric fluents and ``:metric`` under a bijection between generated and reference objects — the
identity first, a graph-isomorphism search only when it fails. Comparisons and the metric are
compared in canonical form (:mod:`plansuite.pddl.expressions`: ``(> a b)`` is ``(< b a)``,
operands of ``+`` and ``*`` in any order), as trees in the same graph, so one renaming must fit
them and the rest of the problem together. Order, whitespace and comments never matter (we compare parsed sets).

*Semantic* (any STRIPS domain: Blocksworld and Gripper through their hand-written models, the
rest through :mod:`~plansuite.nl2pddl.judging.general_semantics`; undecided, with that reason, for PDDL 2.1
numeric and temporal domains, where goal states also depend on numeric values reached by plans):
same initial state and same set of goal states under one bijection. Goals are first completed
with every literal they imply
(:func:`~plansuite.nl2pddl.judging.worlds.implied_literals`), so an under-specified but equivalent goal
matches, and a subtly different one does not.

``mapping`` always reads generated object → reference object.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plansuite.errors import PDDLError
from plansuite.nl2pddl.judging.general_semantics import general_semantic
from plansuite.nl2pddl.judging.graphs import find_mapping, problem_graph
from plansuite.nl2pddl.judging.worlds import SearchBudgetExceeded, implied_literals, world_for
from plansuite.pddl.checks import check_problem
from plansuite.pddl.expressions import Expr, canonical, expr_text, parse_expr, shape
from plansuite.pddl.model import Domain, Problem, atom_text
from plansuite.pddl.numeric_goals import parse_problem21
from plansuite.pddl.reader import read_text


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
def canonical_metric(metric: str | None) -> tuple[str, Expr] | None:
    """Direction and canonical expression (:func:`plansuite.pddl.expressions.canonical`).

    >>> canonical_metric("minimize (+ (total-cost) (* 2 (w a)))")
    ('minimize', ('+', ('*', ('w', 'a'), '2'), ('total-cost',)))
    >>> canonical_metric("MINIMIZE (+ (w b) (total-cost))") == canonical_metric("minimize (+ (total-cost) (w b))")
    True
    """
    if metric is None:
        return None
    direction, _, expr = metric.strip().lower().partition(" ")
    return direction, canonical(parse_expr(expr))


def _expressions(problem: Problem) -> dict[str, list[Expr]]:
    """The problem's expression trees for its graph: goal comparisons and the metric."""
    metric = canonical_metric(problem.metric)
    return {"goal-numeric": sorted(problem.goal_numeric, key=expr_text),
            **({f"metric:{metric[0]}": [metric[1]]} if metric else {})}


# ---- structural -------------------------------------------------------------------------------
def _sections(problem: Problem, goal_pos=None, goal_neg=None) -> dict:
    return {"init": problem.init, "goal": problem.goal_pos if goal_pos is None else goal_pos,
            "goal-not": problem.goal_neg if goal_neg is None else goal_neg}


def _same_under_identity(ref: Problem, gen: Problem) -> bool:
    return (ref.objects == gen.objects and ref.init == gen.init and ref.goal_pos == gen.goal_pos
            and ref.goal_neg == gen.goal_neg and ref.goal_numeric == gen.goal_numeric
            and ref.fluents == gen.fluents
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
    numeric = _numeric_goal_difference(ref, gen)
    if numeric:
        return numeric
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
    if _metric_shape(ref) != _metric_shape(gen) or (
            ref.fluents == gen.fluents and canonical_metric(ref.metric) != canonical_metric(gen.metric)):
        return f"metric differs: {ref.metric!r} vs {gen.metric!r}"
    return "no renaming of objects makes the problems identical"


def _metric_shape(p: Problem) -> Expr | None:
    metric = canonical_metric(p.metric)
    return metric and shape(metric[1], p.objects)


def _numeric_goal_difference(ref: Problem, gen: Problem) -> str:
    """Why the goal comparisons differ whatever the renaming ('' when a renaming might fix it):
    counts, or a comparison whose form (objects replaced by their types) the other lacks."""
    r, g = len(ref.goal_numeric), len(gen.goal_numeric)
    if r != g:
        return f"numeric goal has {g} comparison(s), reference has {r}"
    shapes = [Counter(expr_text(shape(e, p.objects)) for e in p.goal_numeric) for p in (ref, gen)]
    if shapes[0] == shapes[1]:
        return ""
    missing, extra = sorted(shapes[0] - shapes[1]), sorted(shapes[1] - shapes[0])
    return f"numeric goal differs: reference has {missing[0]}, generated {extra[0]}"


def _match(ref: Problem, gen: Problem, ref_sections: dict, gen_sections: dict) -> dict | None:
    """A renaming under which sections, fluents, goal comparisons and metric all coincide."""
    return find_mapping(problem_graph(ref.objects, ref_sections, ref.fluents, _expressions(ref)),
                        problem_graph(gen.objects, gen_sections, gen.fluents, _expressions(gen)))


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
    method (:mod:`plansuite.nl2pddl.judging.general_semantics`); PDDL 2.1 domains stay undecided."""
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
        gen = parse_problem21(generated_text, domain, source=generated_source, check=False)
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
