"""Critic training data (labelled corruptions) and the critic protocol inside the checks."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from plansuite.domains import BUILTIN_DIR, builtin_path, load_builtin
from plansuite.nl2pddl.data.corrupt import KINDS, corrupt, equivalent_variant, shuffled_pddl
from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, scenarios
from plansuite.nl2pddl.judging.critic import (
    CRITIC_LABELS,
    MISMATCH_HINTS,
    CriticVerdict,
    critic_input,
    critic_labels,
    critic_report,
)
from plansuite.nl2pddl.judging.equivalence import compare, semantic
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.judging.worlds import find_state, world_for
from plansuite.pddl.checks import check_problem
from plansuite.pddl.parse import parse_problem

SPECS = {"blocksworld": NL2PDDLSpec(random_problems=25, abstract_sizes=[3, 4, 6], max_objects=6),
         "gripper": NL2PDDLSpec(domain="gripper", random_problems=25, min_objects=2, max_objects=5,
                                abstract_sizes=[2, 4])}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_corruptions_are_valid_problems_with_a_different_meaning(name):
    domain = load_builtin(name)
    world = world_for(domain)
    rng = random.Random(7)
    made = Counter()
    for scenario in scenarios(SPECS[name], domain, seed=2):
        for kind in KINDS:
            bad = corrupt(scenario, domain, kind, rng)
            if bad is None:
                continue
            made[kind] += 1
            p, ref = bad.problem, scenario.problem
            assert bad.kind == kind and bad.detail
            assert not check_problem(p, domain)  # domain-consistent: only a critic can tell
            assert world.assignment(p.init, p.objects) is not None  # a valid initial state
            assert find_state(world, p.objects, p.goal_pos, p.goal_neg) is not None  # reachable goal
            assert semantic(ref, p, domain).equivalent is False
            # The label says what changed.
            if kind == "object":
                assert set(p.objects) != set(ref.objects)
            elif kind == "init":
                assert p.objects == ref.objects and p.init != ref.init and p.goal_pos == ref.goal_pos
            else:
                assert p.objects == ref.objects and p.init == ref.init and p.goal_pos != ref.goal_pos
    n = len(scenarios(SPECS[name], domain, seed=2))
    assert all(made[k] >= 0.8 * n for k in KINDS), made


@pytest.mark.parametrize("name", sorted(SPECS))
def test_positives_are_equivalent_rewrites(name):
    domain = load_builtin(name)
    rng = random.Random(3)
    for scenario in scenarios(SPECS[name], domain, seed=4)[:40]:
        variant = equivalent_variant(scenario.problem, domain, rng)
        text = shuffled_pddl(variant, domain, rng)
        result = compare(scenario.problem, text, domain)
        assert result.parse is True and result.semantic is True
        assert parse_problem(text, domain).init == scenario.problem.init


def test_critic_input_format_and_labels():
    assert CRITIC_LABELS[0] == "match" and set(CRITIC_LABELS[1:]) == set(KINDS)
    text = critic_input("Three  blocks.\nAll on the table.", "(define\n  (problem p))")
    assert text == "DESCRIPTION: Three blocks. All on the table.\nPROBLEM: (define (problem p))"


class ScriptedCritic:
    """Test double for the critic protocol: returns prepared verdicts in order."""

    def __init__(self, *verdicts: CriticVerdict):
        self.verdicts, self.calls = list(verdicts), []

    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        self.calls.append((description, problem_text))
        return self.verdicts.pop(0)


OK = """(define (problem p) (:domain blocksworld-4ops) (:objects a b)
  (:init (on-table a) (on-table b) (clear a) (clear b) (arm-empty))
  (:goal (and (on a b))))"""


@pytest.mark.parametrize("kind,construct", [("object", "(:objects ...)"), ("init", "(:init ...)"),
                                            ("goal", "(:goal ...)"), (None, "problem")])
def test_a_rejecting_critic_yields_a_located_critic_diagnostic(kind, construct):
    critic = ScriptedCritic(CriticVerdict(False, kind, 0.1))
    checker = OperationalChecker(builtin_path("blocksworld"), critic=critic)
    report = checker.check(OK, "Two blocks; put a on b.")
    assert report.solvable and report.plan_valid and report.critic_accepted is False
    assert not report.success
    [d] = report.diagnostics
    assert d.kind == (f"critic-{kind}" if kind else "critic") and d.construct == construct
    assert d.line == {"object": 1, "init": 2, "goal": 3, None: None}[kind]
    assert "0.10" in d.message
    assert critic.calls == [("Two blocks; put a on b.", OK)]


def test_an_accepting_critic_keeps_success_and_no_critic_means_not_run():
    checker = OperationalChecker(builtin_path("blocksworld"), critic=ScriptedCritic(CriticVerdict(True)))
    report = checker.check(OK, "Two blocks.")
    assert report.success and report.critic_accepted is True and not report.diagnostics
    report = OperationalChecker(builtin_path("blocksworld")).check(OK, "Two blocks.")
    assert report.success and report.critic_accepted is None


@pytest.mark.parametrize("kind,construct,line", [("direction", "(:metric ...)", 6),
                                                 ("value", "(:init ...)", 3),
                                                 ("fluent", "(:init ...)", 3)])
def test_pddl21_critic_kinds_point_at_their_section_and_a_repair_rewrites_from_there(
        kind, construct, line):
    from plansuite.nl2pddl.decoding.generators import resample_from
    from plansuite.pddl.fast_downward import PlanResult
    from plansuite.pddl.val import ValResult

    text = (Path(__file__).parent / "data21" / "fuel-p1.pddl").read_text()
    checker = OperationalChecker(BUILTIN_DIR / "fuel-delivery.pddl",
                                 critic=ScriptedCritic(CriticVerdict(False, kind, 0.2)),
                                 planner=lambda d, p: PlanResult("solved", ["(drive t1 a b)"], 0.0),
                                 validator=lambda d, p, plan: ValResult(True, "Plan valid"))
    report = checker.check(text, "a truck with 5 units of fuel")
    [d] = report.diagnostics
    assert (d.kind, d.construct, d.line) == (f"critic-{kind}", construct, line)
    assert d.message.startswith(MISMATCH_HINTS[kind])
    kept = text[:resample_from(text, report.diagnostics)]
    section = {"(:metric ...)": "(:metric", "(:init ...)": "(:init"}[construct]
    assert section not in kept and kept.rstrip() == text[:text.index(section)].rstrip()


def test_critic_labels_follow_the_dataset_and_reports_cover_the_new_kinds():
    assert critic_labels(["match", "goal", "object", "init"]) == CRITIC_LABELS
    timed = critic_labels(["duration", "match", "fluent", "direction"])
    assert timed == ("match", "direction", "fluent", "duration")
    report = critic_report(["match", "direction", "fluent", "duration"],
                           ["match", "direction", "match", "fluent"], timed)
    assert list(report["per_kind"]) == list(timed)
    assert report["per_kind"]["direction"] == {"n": 1, "accuracy": 1.0, "detection": 1.0, "precision": 1.0}
    assert report["per_kind"]["fluent"]["detection"] == 0.0
    assert report["per_kind"]["duration"] == {"n": 1, "accuracy": 0.0, "detection": 1.0, "precision": None}
    assert report["per_kind"]["match"]["precision"] == 0.5  # one of the two accepted was fluent
    assert list(report["confusion"]["match"]) == list(timed)  # no classical columns


def test_the_likelihood_critic_also_reads_a_goal_without_the_facts_it_implies():
    """A goal completed by implied facts is the same problem: the critic also reads it without
    its tail facts while the kept ones imply them, never dropping one that is not implied."""
    from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic

    critic = LikelihoodCritic.__new__(LikelihoodCritic)  # the model-free part: the readings
    critic.domain = load_builtin("blocksworld")
    head = ("(define (problem p)\n  (:domain blocksworld-4ops)\n  (:objects a b)\n  (:init\n"
            "    (on-table a)\n    (on-table b)\n    (clear a)\n    (clear b)\n    (arm-empty)\n  )\n"
            "  (:goal (and\n")
    goal = ["(on a b)", "(on-table b)", "(clear a)", "(arm-empty)"]  # two blocks: all from (on a b)
    read = head + "".join(f"    {g}\n" for g in goal) + "  ))\n)"
    readings = critic.equivalent_readings(read)
    assert len(readings) == 4 and readings[0] == read
    assert [r.count("\n    (") - 5 for r in readings] == [4, 3, 2, 1]
    assert "(on a b)" in readings[-1] and "(arm-empty)\n  ))" not in readings[-1]
    # the implied fact first: what follows it is not implied by it, so nothing is dropped
    swapped = head + "".join(f"    {g}\n" for g in ["(clear a)", "(on a b)"]) + "  ))\n)"
    assert critic.equivalent_readings(swapped) == [swapped]


def test_goal_implication_without_a_state_model_comes_from_the_reachable_states():
    from plansuite.nl2pddl.models.likelihood_critic import goal_implied_by
    from plansuite.pddl.parse import parse_domain

    domain = parse_domain("""(define (domain lamp) (:requirements :strips)
      (:predicates (off ?x) (on ?x) (done))
      (:action switch :parameters (?x) :precondition (off ?x) :effect (and (on ?x) (not (off ?x))))
      (:action finish :parameters (?x) :precondition (on ?x) :effect (done)))""", "lamp.pddl")
    assert world_for(domain) is None
    problem = parse_problem("(define (problem p) (:domain lamp) (:objects a) (:init (off a)) "
                            "(:goal (and (on a) (done))))", domain)
    assert goal_implied_by(problem, domain, [("done",)])  # done only after a is on
    assert not goal_implied_by(problem, domain, [("on", "a")])


def test_a_goal_fact_true_initially_is_not_implied_by_the_others():
    """Without a state model: a fluent goal fact that holds in :init but can be undone is not
    implied by the rest of the goal (only static facts in :init are)."""
    from plansuite.nl2pddl.models.likelihood_critic import goal_implied_by
    from plansuite.pddl.parse import parse_domain

    domain = parse_domain("""(define (domain lamp) (:requirements :strips)
      (:predicates (off ?x) (on ?x) (wired ?x))
      (:action switch :parameters (?x) :precondition (and (off ?x) (wired ?x))
        :effect (and (on ?x) (not (off ?x)))))""", "lamp.pddl")
    problem = parse_problem("(define (problem p) (:domain lamp) (:objects a b) "
                            "(:init (off a) (off b) (wired a) (wired b)) "
                            "(:goal (and (on a) (off b) (wired a))))", domain)
    assert not goal_implied_by(problem, domain, [("on", "a")])  # (off b) can be switched away
    assert goal_implied_by(problem, domain, [("on", "a"), ("off", "b")])  # (wired a): static, in :init


# ---- the mention check: facts an explicit description never states -----------------------------
@pytest.mark.parametrize("name", sorted(SPECS))
def test_mention_check_accepts_every_reference_and_catches_copied_facts_with_wrong_objects(name, tmp_path):
    """Every reference passes against its own description; a reference whose multi-object fact
    has its objects swapped for others (a copy error) is rejected with that fact quoted; abstract
    descriptions, which do not name the objects, get no verdict at all."""
    from plansuite.nl2pddl.data.dataset import build_nl2pddl, load_pairs
    from plansuite.nl2pddl.decoding.mentions import mention_verdict, problem_facts

    domain = load_builtin(name)
    build_nl2pddl(SPECS[name], domain, builtin_path(name).read_text(), tmp_path, seed=4, progress=lambda _: None)
    rejected, explicit, tried = 0, 0, 0
    for pair in [p for split in ("train", "val", "test") for p in load_pairs(tmp_path, split)]:
        reference = parse_problem(pair.target, domain)
        if pair.style == "abstract":
            assert mention_verdict(pair.description, pair.target, reference.objects) is None
            continue
        explicit += 1
        assert mention_verdict(pair.description, pair.target, reference.objects) is None, pair.id
        facts = [f for f in problem_facts(pair.target) if len(f[1].split()) == 3]
        if not facts:
            continue
        section, atom, _ = facts[0]
        pred, first, second = atom.strip("()").split()
        others = [o for o in reference.objects if o not in (first, second)]
        wrong = next((f"({pred} {first} {o})" for o in others
                      if f"({pred} {first} {o})" not in pair.target), None)
        if wrong is None:
            continue
        tried += 1
        verdict = mention_verdict(pair.description, pair.target.replace(atom, wrong, 1), reference.objects)
        if verdict is not None and not verdict.accepted:
            rejected += 1
            assert verdict.kind in (section, None)
            assert verdict.quote in (wrong, None)
    assert explicit > 10 and tried > 10
    assert rejected >= 0.9 * tried, (rejected, tried)  # a clause may relate the new pair for another fact


@pytest.mark.parametrize("name", sorted(SPECS))
def test_mention_check_names_the_objects_of_a_left_out_relation_for_the_repair_to_seed(name, tmp_path):
    """A reference with a fact relating two objects left out is rejected with those objects
    (``related``), which the diagnostic carries as ``relation X Y`` for a seeded rewrite."""
    from plansuite.nl2pddl.data.dataset import build_nl2pddl, load_pairs
    from plansuite.nl2pddl.decoding.mentions import ENGLISH_WORDS, mention_verdict, problem_facts
    from plansuite.nl2pddl.judging.critic import critic_diagnostic

    domain = load_builtin(name)
    build_nl2pddl(SPECS[name], domain, builtin_path(name).read_text(), tmp_path, seed=4, progress=lambda _: None)
    named = 0
    for pair in [p for split in ("train", "val", "test") for p in load_pairs(tmp_path, split) if p.style == "explicit"]:
        objects = parse_problem(pair.target, domain).objects
        facts = [f for f in problem_facts(pair.target) if len(set(f[1].strip("()").split()[1:])) == 2
                 and not set(f[1].strip("()").split()[1:]) & ENGLISH_WORDS]
        if not facts:
            continue
        _, atom, _ = facts[0]
        args = tuple(sorted(atom.strip("()").split()[1:]))
        if sum(set(f[1].strip("()").split()[1:]) == set(args) for f in problem_facts(pair.target)) > 1:
            continue  # another fact relates them too
        verdict = mention_verdict(pair.description, pair.target.replace(atom, "", 1), objects)
        if verdict is not None and verdict.related:
            named += 1
            assert not verdict.accepted and verdict.kind is None
            assert critic_diagnostic(verdict, "c").construct == "relation " + " ".join(verdict.related)
            assert verdict.related == args, pair.id
    assert named >= 3


@pytest.mark.parametrize("name", sorted(SPECS))
def test_mention_check_rejects_an_object_declared_for_nothing(name, tmp_path):
    """An extra object in ``:objects`` that no fact mentions and the text never names (a generator
    declaring four balls for two) is rejected as an object mismatch, quoted on its line, for
    explicit and abstract descriptions alike; the references themselves declare none."""
    from plansuite.nl2pddl.data.dataset import build_nl2pddl, load_pairs
    from plansuite.nl2pddl.decoding.mentions import mention_verdict

    domain = load_builtin(name)
    build_nl2pddl(SPECS[name], domain, builtin_path(name).read_text(), tmp_path, seed=4, progress=lambda _: None)
    styles = set()
    for pair in load_pairs(tmp_path, "test"):
        assert "(:objects " in pair.target
        padded = pair.target.replace("(:objects ", "(:objects spare7 ", 1)
        objects = parse_problem(padded, domain).objects
        assert "spare7" in objects
        verdict = mention_verdict(pair.description, padded, objects)
        assert verdict is not None and not verdict.accepted and verdict.kind == "object", pair.id
        assert verdict.quote == "spare7"
        assert "spare7" in padded.split("\n")[verdict.line - 1]
        styles.add(pair.style)
    assert styles == {"explicit", "abstract"}
