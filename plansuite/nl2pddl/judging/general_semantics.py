"""Semantic equivalence for any STRIPS domain, derived from the domain file alone.

Two problems are *semantically equivalent* when some bijection of objects maps the first
initial state onto the second and the first set of goal states onto the second. Goal states are
the states **reachable from the initial state** in which the goal holds: a goal fact that can
never be false there is implied, whatever the goal says. Nothing here is specific to a domain:

1. *Static facts.* A predicate no action adds or deletes is static; its atoms hold in every
   reachable state exactly when they hold initially. A goal that asks for a static atom absent
   from ``:init`` is unreachable without any search; one that asks for a present one says nothing.
2. *Type predicates.* Unary static predicates (IPC gripper's ``(room r)``, ``(ball b)``,
   ``(gripper g)``) are types in disguise: they are folded into the object's label, so the
   isomorphism search only pairs objects of the same "type" and the facts leave the graph.
3. *Implied facts, exactly.* The reachable states are enumerated (depth-first, over the bit-set
   states of :class:`~plansuite.pddl.simulator.GroundTask`, at most ``max_states``). The
   completed goal is the intersection of all reachable goal states (facts true in every one of
   them) and the completed negative goal is the set of facts true in some reachable state but in
   no goal state. Why this decides equivalence: a conjunctive goal ``G`` is contained in its
   completion ``C(G)``, and every reachable state satisfying ``G`` satisfies ``C(G)``, so the
   reachable states satisfying ``G`` are exactly those containing ``C(G)`` (and avoiding its
   negative part). Equal completions therefore mean equal goal-state sets, and equal sets have
   equal intersections, so the converse holds too. Completion commutes with renaming, hence
   "some bijection maps init onto init and completion onto completion" (a graph isomorphism,
   :mod:`plansuite.nl2pddl.judging.graphs`) is exactly semantic equivalence.
4. *When the state space is too large* the goal as written (minus static atoms) is a sound
   under-approximation of its completion: isomorphic under-approximations still prove
   equivalence (structural equality always implies semantic equality), non-isomorphic initial
   states still disprove it, and anything else is undecided with the reason.

The hand-written Blocksworld and Gripper models (:mod:`plansuite.nl2pddl.judging.worlds`) remain the
fast path for their signatures; tests cross-check their completions against this one.

>>> from plansuite.domains import load_builtin
>>> from plansuite.pddl.model import Problem
>>> bw = load_builtin("blocksworld")
>>> p = Problem("p", bw.name, {"a": "object", "b": "object"},
...             frozenset({("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"),
...                        ("arm-empty",)}), frozenset({("on", "a", "b")}))
>>> sorted(complete_goal(p, bw).goal_pos)
[('arm-empty',), ('clear', 'a'), ('on', 'a', 'b'), ('on-table', 'b')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from plansuite.pddl.checks import check_problem
from plansuite.pddl.model import Atom, Domain, Problem, parse_atom_text
from plansuite.pddl.simulator import GroundTask, _static_predicates

MAX_STATES = 200_000  # reachable states enumerated per problem before falling back (≈ 1.5 s)

# equivalence._match: a renaming (generated -> reference) under which the given sections,
# fluents and metric coincide, or None. Passed in so this module never imports equivalence.
Matcher = Callable[[Problem, Problem, dict, dict], "dict[str, str] | None"]


class GeneralVerdict(NamedTuple):
    equivalent: bool | None  # None: undecided, ``reason`` says why
    mapping: dict[str, str] | None
    reason: str


@dataclass(frozen=True)
class Completion:
    """A problem's initial state and completed goal, ready for the graph check."""

    objects: dict[str, str]  # object -> type, with its unary static facts folded in
    init: frozenset[Atom]  # without the folded unary static facts
    goal_pos: frozenset[Atom] | None  # None: no reachable state satisfies the goal
    goal_neg: frozenset[Atom]
    exact: bool  # False: state space over the limit, goal_pos/goal_neg are the goal as written
    states: int  # reachable states enumerated (0 when no search was needed)


def type_predicates(domain: Domain) -> set[str]:
    """Unary predicates no action changes: types written as facts.

    >>> from plansuite.domains import load_builtin
    >>> sorted(type_predicates(load_builtin("blocksworld")))
    []
    """
    return {p for p in _static_predicates(domain) if len(domain.predicates[p]) == 1}


def labelled_objects(problem: Problem, unary: set[str]) -> dict[str, str]:
    """Each object's type, extended with the type-like facts it has in ``:init``.

    >>> p = Problem("p", "d", {"r": "object", "b": "object"},
    ...             frozenset({("room", "r"), ("ball", "b"), ("at", "b", "r")}), frozenset())
    >>> labelled_objects(p, {"room", "ball"})
    {'r': 'object+room', 'b': 'object+ball'}
    """
    tags: dict[str, list[str]] = {o: [] for o in problem.objects}
    for atom in problem.init:
        if atom[0] in unary and atom[1] in tags:
            tags[atom[1]].append(atom[0])
    return {o: "+".join([t, *sorted(tags[o])]) for o, t in problem.objects.items()}


class _Limit(Exception):
    """More reachable states than allowed."""


def _explore(task: GroundTask, max_states: int) -> tuple[int, int, int | None, int]:
    """(states, OR of all reachable states, AND and OR of the goal states); the AND is ``None``
    when no reachable state is a goal state. Raises :class:`_Limit` past ``max_states``."""
    seen = {task.init}
    stack = [task.init]
    ever = goal_or = 0
    goal_and: int | None = None
    while stack:
        state = stack.pop()
        ever |= state
        if task.is_goal(state):
            goal_and = state if goal_and is None else goal_and & state
            goal_or |= state
        for action in task.applicable(state):
            nxt = task.apply(state, action)
            if nxt not in seen:
                if len(seen) >= max_states:
                    raise _Limit
                seen.add(nxt)
                stack.append(nxt)
    return len(seen), ever, goal_and, goal_or


def _atoms(task: GroundTask, mask: int) -> frozenset[Atom]:
    return frozenset(parse_atom_text(t) for t in task.decode(mask))


def complete_goal(problem: Problem, domain: Domain, max_states: int = MAX_STATES) -> Completion:
    """The completion of ``problem``'s goal (module docstring, steps 1-4)."""
    static = _static_predicates(domain)
    unary = type_predicates(domain)
    objects = labelled_objects(problem, unary)
    init = frozenset(a for a in problem.init if a[0] not in unary)

    def fluent(atoms) -> frozenset[Atom]:
        # Static atoms are the same in every reachable state: the initial state carries them.
        return frozenset(a for a in atoms if a[0] not in static)

    def done(pos, neg, exact, states=0) -> Completion:
        return Completion(objects, init, None if pos is None else fluent(pos), fluent(neg),
                          exact, states)

    if (any(a[0] in static and a not in problem.init for a in problem.goal_pos)
            or any(a[0] in static and a in problem.init for a in problem.goal_neg)):
        return done(None, frozenset(), True)
    task = GroundTask(domain, problem)
    try:
        states, ever, goal_and, goal_or = _explore(task, max_states)
    except _Limit:
        return done(problem.goal_pos, problem.goal_neg, False, max_states)
    if goal_and is None:
        return done(None, frozenset(), True, states)
    return done(_atoms(task, goal_and), _atoms(task, ever & ~goal_or), True, states)


def _graph_problem(problem: Problem, completion: Completion) -> Problem:
    # The matcher reads objects (labelled), fluents and metric from the problem it is given.
    return dataclasses.replace(problem, objects=completion.objects)


def _sections(c: Completion, negatives: bool, goal: bool = True) -> dict:
    if not goal or c.goal_pos is None:
        return {"init": c.init}
    return {"init": c.init, "goal": c.goal_pos, "goal-not": c.goal_neg if negatives else frozenset()}


def general_semantic(ref: Problem, gen: Problem, domain: Domain, match: Matcher,
                     max_states: int = MAX_STATES) -> GeneralVerdict:
    """Semantic verdict for any STRIPS domain; ``match`` is :func:`equivalence._match`."""
    issues = check_problem(gen, domain)  # includes "problem is for domain X, not Y"
    if issues:
        return GeneralVerdict(False, None, f"generated problem is not domain-consistent: {issues[0]}")
    rc, gc = complete_goal(ref, domain, max_states), complete_goal(gen, domain, max_states)
    r_graph, g_graph = _graph_problem(ref, rc), _graph_problem(gen, gc)
    negatives = bool(ref.goal_neg or gen.goal_neg)

    def mapped(goal: bool = True) -> dict[str, str] | None:
        return match(r_graph, g_graph, _sections(rc, negatives, goal), _sections(gc, negatives, goal))

    if rc.states and gc.states and (rc.exact != gc.exact or rc.states != gc.states):
        # Isomorphic initial states have isomorphic (so equally large) reachable state spaces.
        return GeneralVerdict(False, None, f"reachable state spaces differ: reference "
                                           f"{_size(rc, max_states)}, generated {_size(gc, max_states)}")
    reach = (_reachable(rc), _reachable(gc))
    if False in reach:
        if reach == (False, False):  # two empty sets of goal states: only the inits matter
            mapping = mapped(goal=False)
            return (GeneralVerdict(True, mapping, "both goals are unreachable (no goal states)")
                    if mapping is not None else
                    GeneralVerdict(False, None, "initial states differ under every renaming"))
        if None not in reach:
            which = "generated" if reach[1] is False else "reference"
            return GeneralVerdict(False, None, f"only the {which} goal is unreachable from its "
                                               "initial state")
        return _inits_or_undecided(mapped, "one goal is unreachable, the other problem's state "
                                           f"space has more than {max_states} states")
    mapping = mapped()
    if mapping is not None:
        return GeneralVerdict(True, mapping, "" if rc.exact else
                              "decided on the goals as written (state space over the limit)")
    if rc.exact:
        return GeneralVerdict(False, None, "initial states or completed goals differ under "
                                           "every renaming")
    return _inits_or_undecided(mapped, f"more than {max_states} reachable states, so goals could "
                                       "not be completed, and the goals as written differ under "
                                       "every renaming")


def _reachable(c: Completion) -> bool | None:
    """Does some reachable state satisfy the goal? ``None``: not known (state space too large)."""
    if c.goal_pos is None:
        return False
    return True if c.exact else None


def _inits_or_undecided(mapped: Callable[..., dict[str, str] | None], why: str) -> GeneralVerdict:
    """Non-isomorphic initial states still decide a pair whose goals could not be compared."""
    if mapped(goal=False) is None:
        return GeneralVerdict(False, None, "initial states differ under every renaming")
    return GeneralVerdict(None, None, f"undecided: {why}")


def _size(c: Completion, max_states: int) -> str:
    return f"{c.states} states" if c.exact else f"over {max_states} states"
