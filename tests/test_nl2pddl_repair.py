"""The repair loop's stop rules with scripted backends; logging, resume and offline scoring."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, build_nl2pddl, load_pairs
from plansuite.nl2pddl.decoding.generators import BackendError, Feedback
from plansuite.nl2pddl.judging.equivalence import semantic
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.experiment import (
    ATTEMPTS,
    METRICS_JSON,
    METRICS_MD,
    RUN_JSON,
    run_repair,
    score_run,
    start_run,
)
from plansuite.nl2pddl.loop.repair import STOP_RULES, build_feedback, check_max_attempts, repair
from plansuite.nl2pddl.loop.round_metrics import gap_table, round_metrics
from plansuite.pddl.fast_downward import PlanResult
from plansuite.pddl.model import problem_to_pddl
from plansuite.pddl.parse import parse_problem

OK = """(define (problem p) (:domain blocksworld-4ops)
  (:objects a b c)
  (:init (on-table a) (on-table b) (on-table c) (clear a) (clear b) (clear c) (arm-empty))
  (:goal (and (on a b) (on b c))))
"""
TYPO = OK.replace("(on b c)", "(on b d)")
ARITY = OK.replace("(on a b)", "(on a)")
NO_ARM = OK.replace("(arm-empty)", "")


class ScriptedGenerator:
    """Test double for the backend protocol: replies in order, records what it was given."""

    def __init__(self, *replies: str):
        self.replies, self.calls = list(replies), []

    def generate(self, description: str, domain_text: str, feedback: Feedback | None) -> str:
        self.calls.append((description, domain_text, feedback))
        return self.replies.pop(0)


@pytest.fixture(scope="module")
def checker():
    return OperationalChecker(builtin_path("blocksworld"))


def test_stop_success_first_try(checker):
    gen = ScriptedGenerator(OK)
    result = repair("three blocks", gen, checker, max_attempts=3)
    assert result.stop == "success" and len(result.attempts) == 1
    assert gen.calls[0][2] is None and "blocksworld-4ops" in gen.calls[0][1]


def test_stop_success_after_feedback_with_located_diagnostics(checker):
    gen = ScriptedGenerator(TYPO, OK)
    seen = []
    result = repair("three blocks", gen, checker, max_attempts=3, on_attempt=lambda a, s: seen.append((a.number, s)))
    assert result.stop == "success" and [a.report.success for a in result.attempts] == [False, True]
    feedback = gen.calls[1][2]
    assert feedback.previous == TYPO and [d.kind for d in feedback.diagnostics] == ["undeclared-object"]
    assert "line 4" in feedback.message and "object 'd' is not declared" in feedback.message
    assert result.attempts[1].feedback == feedback.message
    assert seen == [(1, None), (2, "success")]


def test_stop_unchanged_ignores_whitespace(checker):
    gen = ScriptedGenerator(TYPO, "  " + TYPO.replace("\n", "\n\n"), OK)
    result = repair("three blocks", gen, checker, max_attempts=5)
    assert result.stop == "unchanged" and len(result.attempts) == 2
    assert result.attempts[1].report == result.attempts[0].report


def test_stop_no_feedback_when_nothing_is_actionable():
    slow = OperationalChecker(builtin_path("blocksworld"),
                              planner=lambda d, p: PlanResult("timeout", None, 20.0, "time limit"))
    result = repair("three blocks", ScriptedGenerator(OK, OK), slow, max_attempts=3)
    assert result.stop == "no-feedback" and len(result.attempts) == 1
    assert build_feedback(OK, result.final.report) is None


def test_stop_max_attempts(checker):
    gen = ScriptedGenerator(TYPO, ARITY, NO_ARM, OK)
    result = repair("three blocks", gen, checker, max_attempts=3)
    assert result.stop == "max-attempts" and len(result.attempts) == 3
    assert [a.report.diagnostics[0].kind for a in result.attempts] == ["undeclared-object", "arity", "unsolvable"]
    assert set(STOP_RULES) == {"success", "unchanged", "no-feedback", "max-attempts"}


def test_success_wins_over_unchanged_and_garbage_is_fed_back(checker):
    result = repair("x", ScriptedGenerator("I cannot do that.", "I cannot do that."), checker, 4)
    assert result.stop == "unchanged" and result.final.report.diagnostics[0].kind == "parse"


class RewritingGenerator(ScriptedGenerator):
    """A backend that offers several rewrites per repair (one scripted list per call)."""

    def __init__(self, first: str, *rewrite_lists: list[str]):
        super().__init__(first)
        self.rewrite_lists = list(rewrite_lists)

    def rewrites(self, description, domain_text, feedback):
        self.calls.append((description, domain_text, feedback))
        return self.rewrite_lists.pop(0)


def test_check_rewrites_keeps_the_first_passing_rewrite(checker):
    gen = RewritingGenerator(TYPO, [ARITY, NO_ARM, OK, TYPO])
    result = repair("three blocks", gen, checker, max_attempts=2, check_rewrites=True)
    assert result.stop == "success" and result.final.text == OK
    assert [a.checks for a in result.attempts] == [1, 3]  # stops checking at the passing one


def test_check_rewrites_without_a_pass_keeps_the_furthest(checker):
    # ARITY fails domain consistency; NO_ARM is consistent but unsolvable: it got further
    gen = RewritingGenerator(TYPO, [ARITY, NO_ARM], [])
    result = repair("three blocks", gen, checker, max_attempts=3, check_rewrites=True)
    assert result.attempts[1].text == NO_ARM and result.attempts[1].checks == 2
    assert result.stop == "unchanged" and result.attempts[2].checks == 0  # nothing offered


def test_check_rewrites_needs_a_backend_that_offers_them(checker):
    from plansuite.errors import ConfigError
    with pytest.raises(ConfigError, match="offers no rewrites"):
        repair("three blocks", ScriptedGenerator(OK), checker, check_rewrites=True)


# ---- the experiment over a dataset ------------------------------------------------------------
@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("nl-repair") / "ds"
    spec = NL2PDDLSpec(name="nl2pddl_gripper", domain="gripper", random_problems=20, min_objects=2,
                       max_objects=3, abstract_sizes=[2, 3])
    build_nl2pddl(spec, load_builtin("gripper"), builtin_path("gripper").read_text(), out, seed=0,
                  progress=lambda _: None)
    return out


class OracleGenerator:
    """Knows the references: first a typo, then the reference (even items) or a wrong-but-solvable
    problem (odd items: the goal sends every ball to the robot's start room instead)."""

    def __init__(self, pairs, fail_on: str | None = None):
        self.by_description = {p.description: (i, p) for i, p in enumerate(pairs)}
        self.fail_on, self.calls = fail_on, 0
        self.domain = load_builtin("gripper")

    def generate(self, description, domain_text, feedback):
        self.calls += 1
        i, pair = self.by_description[description]
        if pair.id == self.fail_on and feedback is not None:
            raise BackendError("server went away")
        if feedback is None:
            return pair.problem.replace("(:init", "(:init (at-robot rooma)")
        if i % 2 == 0:
            return pair.problem
        p = parse_problem(pair.problem, self.domain)
        return problem_to_pddl(replace(p, goal_pos=_start_room_goal(p)), self.domain)


def _start_room_goal(p):
    """The wrong goal ``OracleGenerator`` writes for odd items: every ball to the robot's room."""
    room = next(a[1] for a in p.init if a[0] == "at-robby")
    return frozenset(("at", a[1], room) for a in p.goal_pos if a[0] == "at") or p.goal_pos


def test_run_log_resume_and_scores(data_dir, tmp_path):
    domain = load_builtin("gripper")
    # Pairs whose goal "every ball to the robot's room" would get wrong, so the odd items'
    # rewrite is wrong whichever pairs the split put in train.
    def rewrite_is_wrong(pair):
        ref = parse_problem(pair.problem, domain)
        return semantic(ref, replace(ref, goal_pos=_start_room_goal(ref)), domain).equivalent is False

    pairs = [p for p in load_pairs(data_dir, "train") if rewrite_is_wrong(p)][:6]
    assert len(pairs) == 6
    checker = OperationalChecker(data_dir / "domain.pddl")
    out = tmp_path / "run"
    with pytest.raises(BackendError):  # dies in the middle of item 3's repair
        run_repair(pairs, OracleGenerator(pairs, fail_on=pairs[2].id), checker, out, 3, progress=lambda _: None)
    rows = [json.loads(line) for line in (out / ATTEMPTS).read_text().splitlines()]
    assert [r["item"] for r in rows if r["stop"]] == [pairs[0].id, pairs[1].id]
    assert rows[-1]["item"] == pairs[2].id and rows[-1]["stop"] is None  # a partial item
    first = rows[0]
    assert first["attempt"] == 1 and first["feedback"] is None and first["success"] is False
    assert first["diagnostics"][0]["kind"] == "undeclared-predicate" and first["text"]

    resumed, lines = OracleGenerator(pairs), []
    run_repair(pairs, resumed, checker, out, 3, progress=lines.append)
    assert resumed.calls == 2 * 4  # items 3-6 only, two attempts each
    assert lines[0].startswith("[nl2pddl] resuming: 2 items already done, 4 to go")
    assert lines[-1].startswith("[nl2pddl] 4/4 ") and lines[-1].endswith("ETA 0s)"), lines
    rows = [json.loads(line) for line in (out / ATTEMPTS).read_text().splitlines()]
    assert [r["item"] for r in rows if r["stop"]] == [p.id for p in pairs]
    assert len(rows) == 12 and all(r["stop"] in (None, "success") for r in rows)

    metrics = score_run(out, pairs, load_builtin("gripper"))
    first_round, second_round = metrics["overall"]
    assert first_round["parsed"] == 1.0 and first_round["domain_consistent"] == 0.0
    assert first_round["success"] == 0.0 and first_round["semantic"] == 0.0
    assert second_round["success"] == 1.0 and second_round["plan_valid"] == 1.0
    assert second_round["semantic"] == 0.5 and second_round["success_not_semantic"] == 0.5
    assert second_round["critic_accepted"] is None  # no critic configured: reported as n/a
    assert metrics["stops"] == {"success": 6}
    on_disk = json.loads((out / METRICS_JSON).read_text())
    assert on_disk["overall"] == metrics["overall"] and set(on_disk["by_style"]) <= {"explicit", "abstract"}
    assert "op. success but wrong" in (out / METRICS_MD).read_text()


def test_round_metrics_carry_the_last_attempt_forward_and_table_renders():
    scores = [{"item": "a", "attempt": 1, "parsed": True, "success": True, "structural": True, "semantic": True},
              {"item": "b", "attempt": 1, "parsed": False, "success": False, "structural": False, "semantic": False},
              {"item": "b", "attempt": 2, "parsed": True, "success": True, "structural": False, "semantic": False},
              {"item": "b", "attempt": 3, "parsed": True, "success": True, "structural": False, "semantic": True}]
    rows = round_metrics(scores)
    assert [r["parsed"] for r in rows] == [0.5, 1.0, 1.0]
    assert [r["semantic"] for r in rows] == [0.5, 0.5, 1.0]
    assert [r["success_not_semantic"] for r in rows] == [0.0, 0.5, 0.0]
    table = gap_table(rows).splitlines()
    assert len(table) == 2 + 3 and table[2].startswith("| 1 | 2 | 0.500 |")
    assert "n/a" in table[2]  # critic column never measured


def test_check_rewrites_in_critic_order_keeps_the_passing_rewrite_the_critic_prefers(checker):
    """Two rewrites pass the checks; ``rewrite_order=critic`` keeps the one it scores higher
    (the backend offered it second), ``sampled`` the first offered."""
    from plansuite.errors import ConfigError
    from plansuite.nl2pddl.judging.critic import CriticVerdict
    from plansuite.nl2pddl.judging.problem_checks import OperationalChecker

    liked = OK.replace("(:goal (and", "(:goal (and ")  # the same problem, another text

    class PrefersLiked:
        def __init__(self):
            self.calls = 0

        def judge(self, description, text):
            self.calls += 1
            return CriticVerdict(True, None, 0.9 if text == liked else 0.5)

    # sampled: the first attempt and OK are judged; critic: the first attempt, then both rewrites
    # once (the check of the one kept reuses its verdict)
    for order, kept, calls in (("sampled", OK, 2), ("critic", liked, 3)):
        critic = PrefersLiked()
        judged = OperationalChecker(checker.domain_file, critic=critic, planner=checker.planner,
                                    validator=checker.validator)
        gen = RewritingGenerator(TYPO, [OK, liked])
        result = repair("three blocks", gen, judged, max_attempts=2, check_rewrites=True,
                        rewrite_order=order)
        assert result.stop == "success" and result.final.text == kept
        assert critic.calls == calls
    with pytest.raises(ConfigError, match="rewrite_order='best'"):
        repair("three blocks", RewritingGenerator(TYPO, [OK]), judged, rewrite_order="best")


def test_a_resume_under_other_settings_is_refused_and_overwrite_moves_the_run_aside(tmp_path):
    run = tmp_path / "run"
    settings = {"data_dir": "d", "limit": 3, "max_attempts": 3,
                "backend": {"temperature": 0.0, "timeout_s": 120}, "planner": {"mode": "satisficing"}}
    start_run(run, settings)
    (run / ATTEMPTS).write_text('{"item": "a", "stop": "success"}\n')
    # more items, a longer timeout: the same experiment, resumed
    start_run(run, {**settings, "limit": 10, "backend": {"temperature": 0.0, "timeout_s": 5}})
    assert json.loads((run / RUN_JSON).read_text())["limit"] == 10
    with pytest.raises(ConfigError, match=r"cannot resume: .*backend\.temperature: 0\.0 -> 0\.8.*overwrite=true"):
        start_run(run, {**settings, "backend": {"temperature": 0.8, "timeout_s": 120}})
    lines = []
    start_run(run, {**settings, "max_attempts": 5}, overwrite=True, progress=lines.append)
    aside = [d for d in run.iterdir() if d.name.startswith("old-")]
    assert len(aside) == 1 and (aside[0] / ATTEMPTS).read_text().startswith('{"item": "a"')
    assert not (run / ATTEMPTS).exists() and "moved to" in lines[0]
    assert json.loads((aside[0] / RUN_JSON).read_text())["max_attempts"] == 3
    assert json.loads((run / RUN_JSON).read_text())["max_attempts"] == 5


@pytest.mark.parametrize("bad", [0, -1, "abc", True, 2.5])
def test_max_attempts_must_be_a_positive_integer(bad, checker):
    with pytest.raises(ConfigError, match="max_attempts="):
        check_max_attempts(bad)
    with pytest.raises(ConfigError, match="max_attempts="):
        repair("three blocks", ScriptedGenerator(OK), checker, max_attempts=bad)


@pytest.mark.parametrize(("mode", "limit", "error"), [
    ("no-such-alias", 20, "planner.mode='no-such-alias': choose optimal, satisficing or a Fast Downward alias"),
    ("satisficing", 0, "planner.time_limit=0: must be a positive"),
    ("lama-first", -5, "planner.time_limit=-5"),
])
def test_a_search_fast_downward_would_refuse_every_time_is_one_line_up_front(mode, limit, error):
    # before: an unknown alias made every check a planner error, recorded as "no verdict", and
    # the table's solvable column came out n/a with exit 0
    with pytest.raises(ConfigError, match=re.escape(error)):
        OperationalChecker(builtin_path("blocksworld"), mode=mode, time_limit=limit)


def test_any_fast_downward_alias_is_a_search():
    OperationalChecker(builtin_path("blocksworld"), mode="lama-first", time_limit=5)
    OperationalChecker(builtin_path("blocksworld"), mode="seq-opt-lmcut", time_limit=5)
