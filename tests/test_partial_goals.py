"""Partial goals (``dataset.goal``), larger test problems (``dataset.test_states``), and planning
that stops at the goal as written (issue 43, items 3 and 5)."""

from __future__ import annotations

import json
import random

import pytest
from scripted import ScriptedGenerator

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.goals import GoalSpec, draw_goal
from plansuite.data.load import SHORTEST_FILE, leaked_instances
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.codec import format_completion
from plansuite.pddl.model import Problem, atom_text, parse_atom_text
from plansuite.pddl.parse import load_domain, load_problem
from plansuite.pddl.simulator import GroundTask, TaskCache
from plansuite.planning.engine import plan_instance
from plansuite.planning.episode import InstanceContext
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.outcomes import judge_plan
from plansuite.settings import from_mapping

SPEC = dict(name="tiny", train_states=40, val_states=8, walks_per_state=1, max_walk_len=20,
            test_instances=12, val_instances=6, test_max_walk_len=30, chunk_size=20)
DOMAIN = load_builtin("blocksworld")
TASKS = TaskCache(DOMAIN)


def build(tmp_path, name: str, seed: int = 3, test_sampler=None, **spec):
    out = tmp_path / name
    build_dataset(DatasetSpec(**{**SPEC, **spec}), DOMAIN, builtin_path("blocksworld").read_text(),
                  BlocksworldStates(3, 5), out, seed=seed, workers=1, progress=lambda _: None,
                  test_sampler=test_sampler)
    return out


def task_of(traj_or_row):
    init = [parse_atom_text(a) for a in traj_or_row["init"]]
    objects = traj_or_row["objects"]
    if isinstance(objects, int):  # an instance row: blocks b1..bn
        objects = {f"b{i}": "object" for i in range(1, objects + 1)}
    return TASKS.get(objects, init)


def trajectories(out, split="train", name="trajectories.jsonl"):
    return list(iter_jsonl(out / split / name))


def check_partial_walks(full_dir, part_dir, goal_check) -> int:
    """Each partial trajectory is the start of the full dataset's next unmatched walk (the walks
    are the same, in order), ends at the first state holding its goal, and keeps exactly the full
    walk's verifier rows of its steps; returns how many full walks were dropped."""
    full = trajectories(full_dir)
    full_rows: dict[int, list[dict]] = {}
    for row in iter_jsonl(full_dir / "train" / "verifier.jsonl"):
        full_rows.setdefault(row["traj"], []).append(row)
    part_rows: dict[int, list[dict]] = {}
    for row in iter_jsonl(part_dir / "train" / "verifier.jsonl"):
        part_rows.setdefault(row["traj"], []).append(row)
    it = iter(full)
    dropped = 0
    for traj in trajectories(part_dir):
        for walk in it:
            n = len(traj["actions"])
            if walk["states"][:n + 1] == traj["states"] and walk["actions"][:n] == traj["actions"]:
                break
            dropped += 1
        else:
            raise AssertionError(f"trajectory {traj['id']} is no prefix of a full-goal walk")
        goal = set(traj["goal"])
        assert goal and goal_check(traj["goal"], walk["states"][-1])
        assert goal <= set(traj["states"][-1])
        assert not any(goal <= set(s) for s in traj["states"][:-1])  # first state that holds it
        assert part_rows[traj["id"]] == [
            {**r, "traj": traj["id"]} for r in full_rows[walk["id"]] if r["step"] < n]
    return dropped + sum(1 for _ in it)


def check_instances(folder, goal_check) -> list[dict]:
    """Each instance file's goal is its row's, not true at init, reached by its walk's plan;
    ``goal_check(goal, state the goal was drawn from)``."""
    rows = list(iter_jsonl(folder / "instances.jsonl"))
    for row in rows:
        problem = load_problem(folder / f"{row['id']}.pddl", DOMAIN)
        assert sorted(map(atom_text, problem.goal_pos)) == sorted(row["goal"]) and row["goal"]
        task = GroundTask(DOMAIN, problem)
        assert not task.is_goal(task.init)
        assert task.check_plan(row["walk_plan"]).valid  # reaches the goal as written
        drawn_from = task.check_plan(row["walk_plan"][:row["goal_step"]]).final
        assert goal_check(row["goal"], task.decode(drawn_from))
    return rows


def test_full_goal_is_the_default(tmp_path):
    out = build(tmp_path, "full")
    assert DatasetSpec().goal == GoalSpec() and GoalSpec().is_full
    for traj in trajectories(out):
        assert traj["goal"] == traj["states"][-1]  # the paper's: the complete end state
    rows = check_instances(out / "test", lambda goal, end: sorted(goal) == sorted(end))
    assert len(rows) == SPEC["test_instances"]
    counts = json.loads((out / "manifest.json").read_text())["counts"]["train"]
    assert not {k for k in counts if k.startswith("goal_")}


def test_on_goals_keep_only_on_facts_of_the_same_walks(tmp_path):
    full = build(tmp_path, "full")
    on = build(tmp_path, "on", goal={"predicates": ["on"]})

    def only_on(goal, end):
        return all(a.startswith("(on ") for a in goal) and goal == [
            a for a in end if a.startswith("(on ")]

    dropped = check_partial_walks(full, on, only_on)
    manifest = json.loads((on / "manifest.json").read_text())
    counts = manifest["counts"]["train"]
    assert dropped == counts.get("goal_empty_walks", 0) + counts.get("goal_holds_at_start_walks", 0)
    assert counts["trajectories"] + dropped == SPEC["train_states"]
    check_instances(on / "test", lambda goal, end: set(goal) <= set(end) and all(
        a.startswith("(on ") for a in goal))
    assert manifest["leakage"]["after_resampling"] == 0


def test_subset_goals_are_non_empty_bounded_and_seeded(tmp_path):
    full = build(tmp_path, "full")
    goal = {"mode": "subset", "min_size": 2, "max_size": 3}
    sub = build(tmp_path, "sub", goal=goal)

    def subset(goal, end):
        return 1 <= len(goal) <= 3 and set(goal) <= set(end)

    dropped = check_partial_walks(full, sub, subset)
    sizes = [len(t["goal"]) for t in trajectories(sub)]
    assert set(sizes) == {2, 3}, sizes  # the state always has >= 2 facts: never fewer than min
    assert dropped < SPEC["train_states"] / 2
    rows = check_instances(sub / "test", subset)
    assert {len(r["goal"]) for r in rows} <= {2, 3}
    assert leaked_instances(sub, "test") == leaked_instances(sub, "val_instances") == []
    again = build(tmp_path, "again", goal=goal)
    other = build(tmp_path, "other", seed=4, goal=goal)
    for name in ("train/trajectories.jsonl", "train/verifier.jsonl", "test/instances.jsonl"):
        assert (sub / name).read_bytes() == (again / name).read_bytes(), name
    assert (sub / "train/trajectories.jsonl").read_bytes() != \
        (other / "train/trajectories.jsonl").read_bytes()


def test_draw_goal_is_within_bounds():
    state = [f"(on b{i} b{i + 1})" for i in range(1, 8)] + ["(arm-empty)", "(clear b1)"]
    rng = random.Random(0)
    spec = GoalSpec("subset", predicates=["on"], min_size=2, max_size=4)
    sizes = set()
    for _ in range(200):
        goal = draw_goal(state, spec, rng)
        assert 2 <= len(goal) <= 4 and set(goal) <= set(state[:7])
        assert goal == sorted(goal, key=state.index)  # in the state's order
        sizes.add(len(goal))
    assert sizes == {2, 3, 4}
    assert draw_goal(["(on a b)"], GoalSpec("subset", min_size=3), rng) == ["(on a b)"]


@pytest.mark.parametrize("goal, fragment", [
    ({"mode": "some"}, "dataset.goal.mode='some'"),
    ({"predicates": "on"}, "dataset.goal.predicates='on'"),
    ({"min_size": 0}, "dataset.goal.min_size=0"),
    ({"min_size": 3, "max_size": 2}, "dataset.goal.max_size=2 is below"),
    ({"size": 2}, "dataset.goal.size: unknown setting"),
])
def test_bad_goal_settings_are_one_line(goal, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        from_mapping(DatasetSpec, {"goal": goal}, "dataset")


def test_unknown_goal_predicate_is_refused_before_building(tmp_path):
    with pytest.raises(ConfigError, match="'onn' is not a predicate of domain 'blocksworld-4ops'"):
        build(tmp_path, "bad", goal={"predicates": ["onn"]})
    assert not (tmp_path / "bad").exists()


def test_goals_that_no_walk_can_have_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"dataset.goal.predicates=\[.on.\]: no training walk "
                                          r"has a goal \(empty: 4, true at"):
        build_dataset(DatasetSpec(**{**SPEC, "train_states": 4}, goal={"predicates": ["on"]}),
                      DOMAIN, builtin_path("blocksworld").read_text(), BlocksworldStates(1, 1),
                      tmp_path / "one", seed=0, workers=1, progress=lambda _: None)
    assert not (tmp_path / "one").exists()


def test_shortest_paths_plan_to_the_partial_goal(tmp_path):
    pytest.importorskip("pymimir")
    full = build(tmp_path, "full", shortest_paths=True)
    sub = build(tmp_path, "sub", shortest_paths=True, goal={"mode": "subset", "max_size": 2})
    full_paths = {t["id"]: t for t in trajectories(full, name=SHORTEST_FILE)}
    full_walks = trajectories(full)
    walks = {t["id"]: t for t in trajectories(sub)}
    paths = trajectories(sub, name=SHORTEST_FILE)
    assert len(paths) == len(walks)
    strictly_shorter = 0
    for path in paths:
        walk = walks[path["id"]]
        goal = set(path["goal"])
        assert path["goal"] == walk["goal"] and path["states"][0] == walk["states"][0]
        assert goal <= set(path["states"][-1])  # reaches the goal as written ...
        assert not any(goal <= set(s) for s in path["states"][:-1])  # ... and stops there
        assert len(path["actions"]) <= len(walk["actions"])
        task = task_of({**path, "init": path["states"][0]})
        state = task.encode(path["states"][0])
        for action, nxt in zip(path["actions"], path["states"][1:], strict=True):
            assert task.is_applicable(state, task.action_id(action))
            state = task.apply(state, task.action_id(action))
            assert task.decode(state) == nxt
        # no longer than the shortest path to the same walk's complete end state
        same = next(w for w in full_walks if w["states"][0] == walk["states"][0]
                    and w["actions"][:len(walk["actions"])] == walk["actions"])
        assert len(path["actions"]) <= len(full_paths[same["id"]]["actions"])
        strictly_shorter += len(path["actions"]) < len(full_paths[same["id"]]["actions"])
    assert strictly_shorter > len(paths) / 2


def test_test_states_give_larger_test_problems_only(tmp_path):
    out = build(tmp_path, "big", test_sampler=BlocksworldStates(9, 10),
                goal={"predicates": ["on"]}, test_instances=6)
    test = list(iter_jsonl(out / "test" / "instances.jsonl"))
    assert {r["objects"] for r in test} <= {9, 10} and len(test) == 6
    assert {r["objects"] for r in iter_jsonl(out / "val_instances" / "instances.jsonl")} <= {3, 4, 5}
    assert {len(t["objects"]) for t in trajectories(out)} <= {3, 4, 5}
    check_instances(out / "test", lambda goal, end: set(goal) <= set(end))


def test_cli_draws_test_instances_from_dataset_test_states(tmp_path):
    from test_data_cli import assert_clean_failure, run_cli

    small = ["dataset=tiny", "dataset.train_states=20", "dataset.val_states=2",
             "dataset.test_instances=6", "dataset.val_instances=2", "dataset.goal.predicates=[on]"]
    proc = run_cli(*small, "+dataset.test_states.min_blocks=9", "+dataset.test_states.max_blocks=10",
                   f"out_dir={tmp_path / 'big'}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    test = list(iter_jsonl(tmp_path / "big" / "test" / "instances.jsonl"))
    assert {r["objects"] for r in test} <= {9, 10} and len(test) == 6
    assert all(a.startswith("(on ") for r in test for a in r["goal"])
    manifest = json.loads((tmp_path / "big" / "manifest.json").read_text())
    assert manifest["config"]["dataset"]["test_states"] == {"min_blocks": 9, "max_blocks": 10}
    bad = run_cli(*small, "+dataset.test_states.max_blockz=9", f"out_dir={tmp_path / 'bad'}",
                  cwd=tmp_path)
    assert_clean_failure(bad, tmp_path / "bad", "dataset.test_states", "max_blockz")



def test_cli_goals_like_the_problems_of_a_folder_written_elsewhere(tmp_path):
    """``dataset.goal.mode=problems`` (what ``make demo DOMAIN_FILE=...`` uses): goals of the
    predicates and sizes that domain.problems' own goals have, on that folder's domain."""
    from test_data_cli import assert_clean_failure, run_cli

    from experiments.elsewhere.write_blocksworld import main as write_blocksworld

    write_blocksworld([str(tmp_path / "bw"), "--problems", "20", "--test", "2"])
    small = ["dataset=tiny", "dataset.train_states=20", "dataset.val_states=2",
             "dataset.test_instances=6", "dataset.val_instances=2", "dataset.goal.mode=problems"]
    folder = [f"domain.file={tmp_path / 'bw' / 'domain.pddl'}",
              f"domain.problems={tmp_path / 'bw' / 'problems'}"]
    proc = run_cli("domain=custom", *folder, *small, f"out_dir={tmp_path / 'd'}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    bw = load_domain(tmp_path / "bw" / "domain.pddl")
    sizes = [len(load_problem(p, bw).goal_pos)
             for p in sorted((tmp_path / "bw" / "problems").glob("train*.pddl"))]
    goals = [r["goal"] for r in iter_jsonl(tmp_path / "d" / "test" / "instances.jsonl")]
    assert all(a.startswith("(on ") for g in goals for a in g)
    assert all(min(sizes) <= len(g) <= max(sizes) for g in goals)
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["config"]["dataset"]["goal"] == {"mode": "subset", "predicates": ["on"],
                                                     "min_size": min(sizes), "max_size": max(sizes)}
    bad = run_cli(*small, f"out_dir={tmp_path / 'bad'}", cwd=tmp_path)  # built-in: no folder
    assert_clean_failure(bad, tmp_path / "bad", "dataset.goal.mode=problems", "domain=custom")

# ---- planning stops at the goal as written ---------------------------------------------------
def test_a_partial_goal_is_reached_without_the_other_facts():
    """Three blocks on the table; the goal is only (on a b): pickup a, stack a b reaches it and
    the planner stops there, though no other fact of any end state was asked for (with one more
    goal fact, (holding c), the same script goes on to its third step)."""
    objects = {"a": "object", "b": "object", "c": "object"}
    init = {("on-table", x) for x in "abc"} | {("clear", x) for x in "abc"} | {("arm-empty",)}
    pick = format_completion("(pickup a)", ["(clear b)", "(clear c)", "(holding a)",
                                            "(on-table b)", "(on-table c)"])
    stack = format_completion("(stack a b)", ["(arm-empty)", "(clear a)", "(clear c)", "(on a b)",
                                              "(on-table b)", "(on-table c)"])
    pick_c = format_completion("(pickup c)", ["(clear a)", "(holding c)", "(on a b)",
                                              "(on-table b)"])
    spec = PlannerSpec(name="generator", loop="sample", k=1, max_steps=5)
    for goal, length in (({("on", "a", "b")}, 2),
                         ({("on", "a", "b"), ("holding", "c")}, 3)):
        task = GroundTask(DOMAIN, Problem("p", DOMAIN.name, objects, frozenset(init),
                                          frozenset(goal)))
        ctx = InstanceContext.of("p", task)
        gen = ScriptedGenerator.from_table({"p": [[pick, stack, pick_c]]}, default="garbage")
        result = plan_instance(ctx, spec, gen, None)
        assert [a.end.value for a in result.attempts] == ["goal"]
        assert len(result.plan) == length and gen.calls == length
        assert judge_plan(task, result.plan)[0].value == "success"
        assert task.check_plan([s.parsed.action for s in result.plan]).valid


# ---- results.json and the report: GRR by object count and by goal size ----------------------
def test_results_and_report_break_grr_down_by_objects_and_goal_size(tmp_path):
    from plansuite.data.load import load_instances
    from plansuite.planning.baselines import RandomApplicableGenerator
    from plansuite.planning.evaluate import EvalSettings, evaluate
    from plansuite.planning.metrics import wilson_interval
    from plansuite.report.collect import load_rows
    from plansuite.report.html import write_report

    data = build(tmp_path, "data", test_sampler=BlocksworldStates(3, 7), test_instances=16,
                 goal={"mode": "subset", "predicates": ["on"], "max_size": 3})
    spec = PlannerSpec(name="random_restart", loop="sample", k=2, max_steps=12,
                       propose_on_failure="none")
    out = tmp_path / "eval" / "random"
    results = evaluate(load_instances(data / "test", DOMAIN), DOMAIN, builtin_path("blocksworld"),
                       RandomApplicableGenerator(), None, EvalSettings(spec, val=False), out,
                       log=lambda _: None)
    records = list(iter_jsonl(out / "instances.jsonl"))
    made = {r["id"]: r for r in iter_jsonl(data / "test" / "instances.jsonl")}
    for record in records:
        assert record["objects"] == made[record["id"]]["objects"]
        assert record["goal_size"] == len(made[record["id"]]["goal"])
    for key, field in (("by_objects", "objects"), ("by_goal_size", "goal_size")):
        by = results[key]
        values = sorted({r[field] for r in records})
        assert list(by) == [str(v) for v in values] and len(values) > 1
        for value in values:
            hits = [r["outcome"] == "success" for r in records if r[field] == value]
            assert by[str(value)] == {"n": len(hits), "grr": round(sum(hits) / len(hits), 4),
                                      "grr_ci": list(wilson_interval(sum(hits), len(hits)))}
        assert sum(g["n"] for g in by.values()) == results["n_instances"] == 16
    assert json.loads((out / "results.json").read_text())["by_goal_size"] == results["by_goal_size"]
    write_report(load_rows([tmp_path / "eval"]), tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    for title, label, by in (("## GRR by object count", "objects", results["by_objects"]),
                             ("## GRR by goal size", "atoms", results["by_goal_size"])):
        section = md.split(title, 1)[1].split("\n## ", 1)[0]
        header, _, row = ([c.strip() for c in ln.strip("|").split("|")]
                          for ln in section.splitlines() if ln.startswith("|"))
        assert header[3:] == [f"{label} {g}" for g in by] and row[0] == "random"
        assert row[3:] == [f"{g['grr']:.3f} [{g['grr_ci'][0]:.3f}, {g['grr_ci'][1]:.3f}] "
                           f"(n={g['n']})" for g in by.values()]
    assert "GRR by object count" in (tmp_path / "report" / "report.html").read_text()
