"""Resume after SIGKILL, torn journal lines, and sharded runs equal to a single process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripted import write_toy_instances

from plansuite.data.load import load_instances
from plansuite.domains import builtin_path, load_builtin
from plansuite.planning.baselines import RandomApplicableGenerator
from plansuite.planning.evaluate import EvalSettings, evaluate
from plansuite.planning.loops import PlannerSpec

REPO = Path(__file__).resolve().parents[1]
SPEC = PlannerSpec(name="random_restart", loop="sample", k=5, max_steps=20, propose_on_failure="none")


class SlowRandom(RandomApplicableGenerator):
    """The random baseline, slowed down so that a run can be killed halfway."""

    def __init__(self, delay_s: float):
        self.delay_s = delay_s

    def propose(self, requests):
        time.sleep(self.delay_s)
        return super().propose(requests)


def run_eval(folder: str, out: str, delay_s: float = 0.0, rank: int = 0, world: int = 1) -> dict | None:
    """The run under test; also the entry point of the subprocess that gets killed."""
    domain = load_builtin("blocksworld")
    return evaluate(load_instances(folder, domain), domain, builtin_path("blocksworld"),
                    SlowRandom(delay_s), None, EvalSettings(SPEC, batch_size=2, rank=rank, world=world),
                    out, log=lambda _: None)


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    return write_toy_instances(tmp_path_factory.mktemp("data") / "toy", n=10, seed=2)


@pytest.fixture(scope="module")
def reference(instances, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single")
    assert run_eval(str(instances), str(out)) is not None
    return out


def comparable(out: Path) -> tuple[list[dict], dict]:
    """instances.jsonl and results.json without what legitimately differs between runs."""
    records = [{k: v for k, v in json.loads(ln).items() if k not in ("elapsed_s", "shard")}
               for ln in (out / "instances.jsonl").read_text().splitlines()]
    results = json.loads((out / "results.json").read_text())
    for key in ("wall_s", "engine_s", "attempts_per_s", "sessions", "config"):
        results.pop(key)
    return records, results


def journal_ids(out: Path) -> list[str]:
    return [json.loads(ln)["id"] for f in sorted((out / "journal").glob("shard-*.jsonl"))
            for ln in f.read_text().splitlines() if ln.endswith("}")]


def test_sigkill_then_rerun_loses_and_duplicates_nothing(instances, reference, tmp_path):
    out = tmp_path / "killed"
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"from test_eval_resume import run_eval; run_eval({str(instances)!r}, {str(out)!r}, 0.01)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    journal = out / "journal" / "shard-0.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (journal.is_file() and
                                          len(journal.read_text().splitlines()) >= 3):
        assert proc.poll() is None, "the slowed-down run finished before it could be killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = journal_ids(out)
    assert 3 <= len(before) < 10 and not (out / "results.json").exists()
    # a write torn by the kill: the resumed run must drop it, not trust or duplicate it
    with journal.open("a") as f:
        f.write('{"id": "p0009", "outcome": "succ')

    assert run_eval(str(instances), str(out)) is not None
    after = journal_ids(out)
    assert sorted(after) == sorted(set(after)) and len(after) == 10
    assert after[:len(before)] == before  # finished work was kept, not redone
    assert comparable(out) == comparable(reference)


def test_rank_split_merges_to_the_single_process_result(instances, reference, tmp_path):
    out = tmp_path / "sharded"
    assert run_eval(str(instances), str(out), rank=2, world=3) is None
    assert run_eval(str(instances), str(out), rank=0, world=3) is None
    merged = run_eval(str(instances), str(out), rank=1, world=3)
    assert merged is not None and merged["sessions"] == 3
    assert sorted(journal_ids(out)) == sorted(set(journal_ids(out)))
    assert comparable(out) == comparable(reference)
    # a later run with another shard count finds everything done and plans nothing again
    assert run_eval(str(instances), str(out), rank=0, world=2)["sessions"] == 3


def test_resume_with_another_world_size_dedups_by_instance_id(instances, reference, tmp_path):
    out = tmp_path / "regrid"
    assert run_eval(str(instances), str(out), rank=1, world=2) is None  # half the instances
    assert run_eval(str(instances), str(out)) is not None  # a single process finishes the rest
    assert len(journal_ids(out)) == 10
    assert comparable(out) == comparable(reference)


def test_concurrent_cli_shards_equal_one_process(instances, tmp_path):
    common = [sys.executable, "-m", "plansuite.cli.eval", "generator=synthetic", "verifier=oracle",
              "planner=generator_verifier", "planner.k=4", f"instances={instances}", "logger=none",
              "optimal.enabled=false"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen(common + [f"out_dir={tmp_path / 'sh'}", f"shard.rank={r}",
                                        "shard.world=2"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in (0, 1)]
    single = subprocess.run(common + [f"out_dir={tmp_path / 'one'}"], cwd=REPO, env=env,
                            capture_output=True, text=True)
    assert single.returncode == 0, single.stderr
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert comparable(tmp_path / "sh") == comparable(tmp_path / "one")
