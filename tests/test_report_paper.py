"""The report's paper column and paired comparisons, from hand-made result folders."""

from __future__ import annotations

import json

from plansuite.report.collect import load_rows
from plansuite.report.paper import ablation_table, paired_table, paper_table


def write_run(root, name, planner, verifier, successes, instances_dir, seed=0, k=25):
    folder = root / name
    folder.mkdir(parents=True)
    n, wins = len(successes), sum(successes)
    res = {"planner": planner, "k": k, "n_instances": n, "grr": wins / n, "grr_ci": [0, 1],
           "btr": 0.1, "btr_ci": [0, 1],
           "outcomes": {"success": wins, "no_plan": n - wins}, "calls": {"generator": 10},
           "run": {"seed": seed, "instances_dir": str(instances_dir), "verifier": verifier,
                   "planner": {"name": planner, "k": k}}}
    (folder / "results.json").write_text(json.dumps(res))
    (folder / "instances.jsonl").write_text("".join(
        json.dumps({"id": f"p{i:03d}", "outcome": "success" if s else "no_plan"}) + "\n"
        for i, s in enumerate(successes)))


def test_paired_rows_against_each_baseline(tmp_path):
    paper = tmp_path / "benchmarks" / "paper-blocksworld-test"
    random_ = [True] * 10 + [False] * 10
    learned = [True] * 10 + [True] * 8 + [False] * 2  # wins 8 instances random lost, loses none
    write_run(tmp_path / "eval", "random_restart", "random_restart", "none", random_, paper)
    write_run(tmp_path / "eval", "refine", "refine_resume", "oracle", learned, paper)
    write_run(tmp_path / "eval", "other-seed", "refine_resume", "oracle", learned, paper, seed=1)
    rows = load_rows([tmp_path / "eval"])
    headers, body = paired_table(rows)
    assert len(body) == 1  # the other seed is not paired with seed 0's baseline
    row = dict(zip(headers, body[0], strict=True))
    assert (row["run"], row["baseline"], row["N"]) == ("refine", "random_restart", "20")
    assert row["difference [paired 95% CI]"].startswith("+0.400 [+")
    assert (row["run only"], row["baseline only"], row["run vs baseline"]) == ("8", "0", "above")


def test_paper_numbers_only_beside_runs_on_the_papers_instances(tmp_path):
    write_run(tmp_path / "a", "generator", "generator", "none", [True, False],
              tmp_path / "paper-blocksworld-test")
    write_run(tmp_path / "b", "generator", "generator", "none", [True, False],
              tmp_path / "data" / "test")
    headers, body = paper_table(load_rows([tmp_path / "a"]))
    assert body[0][headers.index("GRR paper")] == "0.375"
    assert paper_table(load_rows([tmp_path / "b"])) is None


def test_ablation_steps_are_paired_and_missing_runs_skipped(tmp_path):
    paper = tmp_path / "paper-blocksworld-test"
    write_run(tmp_path / "eval", "generator-paper", "generator", "none", [True] * 5 + [False] * 15, paper)
    write_run(tmp_path / "eval", "generator", "generator", "none", [True] * 5 + [True, False] * 5
              + [False] * 5, paper)
    steps = [["eval/generator", "eval/generator-paper", "shortest paths"],
             ["eval/refine", "eval/generator", "refine"]]  # no eval/refine: skipped
    headers, body = ablation_table(tmp_path, steps)
    assert len(body) == 1
    row = dict(zip(headers, body[0], strict=True))
    assert (row["change"], row["run"], row["baseline"], row["N"]) == (
        "shortest paths", "generator", "generator-paper", "20")
    assert row["difference [paired 95% CI]"].startswith("+0.250 [+")
    assert (row["run only"], row["baseline only"]) == ("5", "0")
    assert ablation_table(tmp_path, steps[1:]) is None
