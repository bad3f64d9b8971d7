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
    # the same ids in another folder (a validation split) are other instances: not paired
    write_run(tmp_path / "eval", "on-val", "refine_resume", "oracle", learned, tmp_path / "val")
    # a pipeline stage's output from an earlier config, moved aside: not a row at all
    write_run(tmp_path / "eval", "refine.stale-0123abcd", "refine_resume", "oracle", learned, paper)
    rows = load_rows([tmp_path / "eval"])
    assert sorted(r.label for r in rows) == ["on-val", "other-seed", "random_restart", "refine"]
    headers, body = paired_table(rows)
    assert len(body) == 1  # the other seed and the other folder are not paired with the baseline
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


def test_the_report_page_keeps_its_own_title_after_the_extra_sections(tmp_path):
    from plansuite.report.html import write_report

    paper = tmp_path / "paper-blocksworld-test"
    write_run(tmp_path / "eval", "random_restart", "random_restart", "none", [True, False] * 5, paper)
    write_run(tmp_path / "eval", "refine", "refine_resume", "oracle", [True] * 8 + [False] * 2, paper)
    for f in (tmp_path / "eval").glob("*/instances.jsonl"):  # the figures read each instance's calls
        f.write_text("".join(json.dumps({**json.loads(line), "calls": {"generator": 3}}) + "\n"
                             for line in f.read_text().splitlines()))
    rows = load_rows([tmp_path / "eval"])
    assert paired_table(rows)  # the page has an extra section after Table 1
    out = tmp_path / "report"
    page = write_report(rows, out, "My suite").read_text()
    assert "<title>My suite</title>" in page and "<h1>My suite</h1>" in page
    assert (out / "report.md").read_text().startswith("# My suite\n")
