"""plansuite-nl2pddl task=compare: paired comparison of two scored NL->PDDL runs, or two rounds of one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def scored(run: Path, rows: list[tuple[str, str, int, bool]]) -> Path:
    """A run directory whose scores.jsonl has (item, style, attempt, semantic) rows."""
    run.mkdir()
    with open(run / "scores.jsonl", "w") as f:
        for item, style, attempt, ok in rows:
            f.write(json.dumps({"item": item, "style": style, "attempt": attempt, "parsed": True,
                                "semantic": ok, "success": ok}) + "\n")
    return run


def paired(tmp_path: Path, runs: list[Path], rounds: tuple[int, int] | None = None) -> subprocess.CompletedProcess:
    args = [f"runs=[{','.join(map(str, runs))}]", f"out_dir={tmp_path / 'cmp'}"]
    if rounds:
        args.append(f"rounds=[{rounds[0]},{rounds[1]}]")
    return subprocess.run([sys.executable, "-m", "plansuite.cli.nl2pddl", "task=compare", *args],
                          capture_output=True, text=True, timeout=120)


def row(out: str, style: str, column: str) -> list[str]:
    return next(line.split(" | ")[1:] for line in out.splitlines()
                if line.startswith(f"| {style} |") and f"| {column} |" in line)


def test_two_runs_are_paired_by_item_at_their_final_round(tmp_path):
    a = scored(tmp_path / "a", [("i1", "explicit", 1, False), ("i1", "explicit", 2, True),
                                ("i2", "abstract", 1, True), ("i3", "explicit", 1, True)])
    b = scored(tmp_path / "b", [("i1", "explicit", 1, False), ("i2", "abstract", 1, False),
                                ("i3", "explicit", 1, True), ("i9", "explicit", 1, True)])
    out = paired(tmp_path, [a, b])
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cmp" / "compare.md").read_text().endswith(out.stdout.split("\n", 1)[1])
    n, _, rate_a, rate_b, delta, _ = row(out.stdout, "all", "semantic")
    assert (n, rate_a, rate_b, delta) == ("3", "1.000", "0.333", "+0.667")  # i9 is unpaired
    assert row(out.stdout, "explicit", "semantic")[:4] == ["2", "semantic", "1.000", "0.500"]


def test_two_rounds_of_one_run_and_bad_input_is_one_error_line(tmp_path):
    run = scored(tmp_path / "r", [("i1", "explicit", 1, False), ("i1", "explicit", 2, True),
                                  ("i2", "explicit", 1, True)])
    out = paired(tmp_path, [run], rounds=(2, 1))
    _, _, rate_a, rate_b, delta, interval = row(out.stdout, "all", "semantic")
    assert (rate_a, rate_b, delta) == ("1.000", "0.500", "+0.500") and interval.startswith("[")
    for bad in (paired(tmp_path, [tmp_path / "nowhere", run]), paired(tmp_path, [run])):
        assert bad.returncode != 0 and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
