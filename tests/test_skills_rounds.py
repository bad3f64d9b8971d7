"""Skill-discovery rounds end to end with scripted components: the filter, refusal, resume.

Generators are the synthetic fake (:class:`~plansuite.planning.baselines.SyntheticGenerator`)
at two quality levels, named "weak" and "strong"; "finetuning" returns the scripted quality of
each round's candidate, so the filter's decision is known in advance. Everything else (the
rollouts, verification, archive, evaluation, records) is the real code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR
from plansuite.cli.data import run as build_data
from plansuite.cli.skills import run as skills_cli
from plansuite.data.load import load_instances
from plansuite.errors import ConfigError
from plansuite.pddl.parse import load_domain
from plansuite.planning.baselines import SyntheticGenerator
from plansuite.planning.loops import PlannerSpec
from plansuite.skills.instances import held_out_pairs, problem_pair, sample_instances
from plansuite.skills.rounds import RoundSettings, SkillDiscovery, read_rounds

QUALITY = {"weak": {"p_bad_action": 0.15, "greedy": 0.8},
           "strong": {"p_garbage": 0.0, "p_bad_action": 0.0, "p_bad_state": 0.0, "greedy": 1.0}}


class FakeBackend:
    """``script[round dir name]`` is the quality of that round's candidate; calls are recorded."""

    def __init__(self, script: dict[str, str], fail_in: str | None = None):
        self.script, self.fail_in = script, fail_in
        self.finetuned: list[tuple[str, list[dict]]] = []
        self.loaded: list[str] = []

    def generator(self, name: str) -> SyntheticGenerator:
        self.loaded.append(name)
        return SyntheticGenerator(**QUALITY[Path(name).name])

    def finetune(self, base: str, transitions: Path, out_dir: Path, seed: int) -> str:
        if out_dir.parent.name == self.fail_in:
            raise KeyboardInterrupt  # a kill in the middle of the round
        rows = [json.loads(x) for x in transitions.read_text().splitlines()]
        self.finetuned.append((out_dir.parent.name, rows))
        return str(out_dir / self.script[out_dir.parent.name])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("skills-ds") / "ds"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("data", [f"out_dir={out}", "seed=3", "workers=1", "dataset.train_states=20",
                               "dataset.val_states=4", "dataset.test_instances=12",
                               "dataset.val_instances=12", "dataset.test_max_walk_len=10",
                               "domain.states.max_blocks=5"])
    build_data(cfg)
    return out


def discovery(data_dir: Path, out: Path, backend: FakeBackend, rounds: int = 2,
              **settings) -> SkillDiscovery:
    domain = load_domain(data_dir / "domain.pddl")
    held_out = [data_dir / "test", data_dir / "val_instances"]
    exclude = held_out_pairs(held_out, domain)

    def rollout(r: int):
        return sample_instances(data_dir, out / f"r{r:02d}" / "instances", 10, 1000, r, domain,
                                exclude)

    spec = PlannerSpec(name="generator", loop="sample", k=2, max_steps=20, propose_on_failure="last")
    return SkillDiscovery(out, domain, data_dir / "domain.pddl", str(out / "initial" / "weak"),
                          backend, spec, None, rollout, load_instances(data_dir / "val_instances", domain),
                          load_instances(data_dir / "test", domain), held_out,
                          RoundSettings(rounds=rounds, val=False, progress_every_s=1e9, **settings),
                          log=lambda _: None)


def test_a_better_candidate_is_kept_a_tie_is_rejected_and_the_generator_stays(data_dir, tmp_path):
    backend = FakeBackend({"r01": "strong", "r02": "strong"})
    rows = discovery(data_dir, tmp_path, backend).run()
    assert [r["round"] for r in rows] == [0, 1, 2]
    r0, r1, r2 = rows
    # round 1: weak -> strong on the same validation items: accepted, strong is now in use
    assert r1["batch"] > 0 and r1["rollout"]["verified"] >= r1["batch"]
    assert r1["accepted"] is True and r1["reason"].startswith("accepted")
    assert r1["val"]["candidate"]["solved"] > r1["val"]["current"]["solved"]
    assert r1["val"]["current"] == r0["val"]["current"]  # the in-use generator is not re-run
    assert r1["generator"] == str(tmp_path / "r01" / "candidate" / "strong")
    assert r1["archive"] == r1["batch"] and r1["test"]["grr"] > r0["test"]["grr"]
    # round 2: strong -> strong ties on every item: rejected, round 1's generator stays in use
    assert r2["accepted"] is False and "needs +1" in r2["reason"]
    assert r2["val"]["candidate"]["solved"] == r2["val"]["current"]["solved"]
    assert r2["generator"] == r1["generator"] and r2["test"] == r1["test"]
    assert r2["archive"] == r1["archive"]  # the batch was discarded
    archive = [json.loads(x) for x in (tmp_path / "skills.jsonl").read_text().splitlines()]
    assert len(archive) == r1["archive"] and {s["source"]["round"] for s in archive} == {1}
    # round 2's candidate was finetuned on the archive plus its own batch, nothing else
    (_, first), (_, second) = backend.finetuned
    steps_r1 = sum(len(s["actions"]) for s in archive)
    assert len(first) == steps_r1 and len(second) > steps_r1
    batch2 = [json.loads(x) for x in (tmp_path / "r02" / "batch.jsonl").read_text().splitlines()]
    assert len(second) == steps_r1 + sum(len(s["actions"]) for s in batch2)
    # the records and the table are on disk
    assert read_rounds(tmp_path / "rounds.jsonl") == rows
    table = (tmp_path / "rounds.md").read_text().splitlines()
    assert len(table) == 2 + 3 and "| 1 |" in table[3] and "| yes |" in table[3]
    assert "| no |" in table[4]


def test_rollouts_never_touch_held_out_instances(data_dir, tmp_path):
    domain = load_domain(data_dir / "domain.pddl")
    held = held_out_pairs([data_dir / "test", data_dir / "val_instances"], domain)
    first = sample_instances(data_dir, tmp_path / "a", 30, 1000, 1, domain, held)
    again = sample_instances(data_dir, tmp_path / "a", 30, 1000, 1, domain, held)
    other = sample_instances(data_dir, tmp_path / "b", 30, 1000, 2, domain, held)
    assert [i.problem for i in first] == [i.problem for i in again]  # written once, re-read
    assert {problem_pair(i.problem) for i in first} != {problem_pair(i.problem) for i in other}
    assert not held & {problem_pair(i.problem) for i in first + other}
    assert all(i.problem.name.startswith("tiny-skills-r01") for i in first)
    # a pair that would be drawn is skipped when it is held out
    drawn = {problem_pair(i.problem) for i in first}
    redrawn = sample_instances(data_dir, tmp_path / "c", 30, 1000, 1, domain, held | drawn)
    assert len(redrawn) == 30 and not drawn & {problem_pair(i.problem) for i in redrawn}


def skills_args(data_dir: Path, out: Path, *extra: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("skills", [f"data_dir={data_dir}", f"out_dir={out}", "generator=/nonexistent",
                                  "rounds=1", *extra])


@pytest.mark.parametrize("folder", ["test", "val_instances", "test_copy"])
def test_cli_refuses_a_rollout_folder_from_the_held_out_sets(data_dir, tmp_path, folder):
    if folder == "test_copy":  # a training folder that smuggles in one test problem
        rollout = tmp_path / "mine"
        rollout.mkdir()
        shutil.copy(sorted((data_dir / "test").glob("*.pddl"))[3], rollout / "x.pddl")
        match = "initial state and goal of a held-out instance"
    else:
        rollout = data_dir / folder
        match = "held-out folder"
    with pytest.raises(ConfigError, match=match):
        skills_cli.__wrapped__(skills_args(data_dir, tmp_path / "o", f"rollout.instances={rollout}"))
    assert not (tmp_path / "o").exists()


def test_resume_after_a_kill_skips_finished_work(data_dir, tmp_path):
    killed = FakeBackend({"r01": "strong"}, fail_in="r02")
    with pytest.raises(KeyboardInterrupt):
        discovery(data_dir, tmp_path, killed, rounds=2).run()
    assert [r["round"] for r in read_rounds(tmp_path / "rounds.jsonl")] == [0, 1]
    with (tmp_path / "rounds.jsonl").open("a") as f:
        f.write('{"round": 2, "torn')  # the kill also tore a line
    rollout_before = (tmp_path / "r02" / "rollout" / "instances.jsonl").read_text()

    resumed = FakeBackend({"r01": "weak", "r02": "strong"})  # r01 must not be redone
    rows = discovery(data_dir, tmp_path, resumed, rounds=2).run()
    assert [r["round"] for r in rows] == [0, 1, 2]
    assert [name for name, _ in resumed.finetuned] == ["r02"]
    assert rows[1]["generator"].endswith("r01/candidate/strong")
    assert (tmp_path / "r02" / "rollout" / "instances.jsonl").read_text() == rollout_before
    assert [r["round"] for r in read_rounds(tmp_path / "rounds.jsonl")] == [0, 1, 2]

    # more rounds later: only round 3 runs; other settings in the same out_dir are refused
    more = FakeBackend({"r03": "strong"})
    assert len(discovery(data_dir, tmp_path, more, rounds=3).run()) == 4
    assert [name for name, _ in more.finetuned] == ["r03"]
    with pytest.raises(ConfigError, match=r"another settings.min_gain \(1, now 2\)"):
        discovery(data_dir, tmp_path, FakeBackend({}), rounds=3, min_gain=2).run()
