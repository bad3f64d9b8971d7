"""Table 2 over several seeds: every run is counted, none is dropped."""

from __future__ import annotations

import math
from statistics import mean, stdev

from plansuite.planning.metrics import wilson_interval
from plansuite.report.collect import Row
from plansuite.report.html import write_report
from plansuite.report.tables import cells, table2


def run(init: str, seed: int, successes: int, bad: int, n: int = 50) -> Row:
    grr, btr = successes / n, bad / n
    return Row(f"gv-{init}-seed{seed}", "generator_verifier", init, 25, 1.0, seed, n, grr,
               wilson_interval(successes, n), btr, wilson_interval(bad, n),
               {"success": successes, "bad_action": bad}, {"generator": 100}, path=f"{init}/{seed}")


def three_seeds() -> list[Row]:
    return [*(run("base", s, g, b) for s, (g, b) in enumerate(((20, 10), (25, 8), (30, 6)))),
            *(run("generator", s, g, b) for s, (g, b) in enumerate(((31, 4), (33, 3), (35, 2))))]


def test_three_seed_table2_aggregates_every_run_of_each_cell():
    headers, body = table2(three_seeds())
    (row,) = body
    cols = dict(zip(headers, row, strict=True))
    assert cols["runs (base / generator)"] == "3 / 3"
    # mean over seeds (0.4, 0.5, 0.6), its t-interval, and the 75 of 150 instances pooled
    assert cols["GRR V_base"] == ("0.500 [0.252, 0.748] across runs; pooled 0.500 "
                                  "[0.421, 0.579]")
    assert cols["GRR V_generator"].startswith("0.660 [")
    assert cols["BTR V_generator"].endswith(f"pooled 0.060 [{wilson_interval(9, 150)[0]:.3f}, "
                                            f"{wilson_interval(9, 150)[1]:.3f}]")


def test_a_single_run_per_cell_reads_as_before():
    rows = [r for r in three_seeds() if r.seed == 2]
    (row,) = table2(rows)[1]
    assert row[3:6] == ["1 / 1", "0.600 [0.462, 0.724]", "0.700 [0.562, 0.809]"]


def test_cells_keep_every_seed_in_order():
    grouped = cells(list(reversed(three_seeds())))
    assert [r.seed for r in grouped[("generator_verifier", 25, 1.0, "base")].runs] == [0, 1, 2]


def test_the_html_report_says_how_many_runs_a_cell_holds(tmp_path):
    page = write_report(three_seeds(), tmp_path, "t").read_text()
    assert "3 / 3" in page and "across runs" in page


def test_the_interval_over_runs_uses_the_exact_t_quantile_of_its_degrees_of_freedom():
    rows = [run("base", s, 20 + s, 5) for s in range(12)]  # 12 seeds: 11 degrees of freedom
    (cell,) = cells(rows).values()
    low, high = cell.seed_interval("grr")
    values = [r.grr for r in rows]
    half = 2.200985 * stdev(values) / math.sqrt(len(values))  # t(0.975; 11), not t(0.975; 10)
    assert (low, high) == (round(mean(values) - half, 4), round(mean(values) + half, 4))
