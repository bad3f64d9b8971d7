"""A self-contained HTML page (figures embedded as data URIs) plus report.md and rows.json."""

from __future__ import annotations

import base64
import html
import json
import time
from dataclasses import asdict
from pathlib import Path

from plansuite.report import figures
from plansuite.report.collect import Row
from plansuite.report.paper import paired_table, paper_table
from plansuite.report.tables import breakdown_table, markdown, table1, table2


def _html_table(headers: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<figure><img src="data:image/png;base64,{data}" alt="{path.stem}"><figcaption>{path.name}</figcaption></figure>'


def write_report(rows: list[Row], out: Path, title: str = "plansuite report") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    pngs = [p for p in (figures.grr_vs_k(rows, out), figures.temperature(rows, out),
                        figures.outcomes(rows, out), figures.calls_per_success(rows, out),
                        figures.sample_efficiency(rows, out)) if p is not None]
    t1 = table1(rows)
    t2 = table2(rows)
    # (title, table) sections after Table 1/2, each only when it has rows
    more = [(heading, t) for heading, t in (
        ("Beside the paper: its published numbers on the same 200 instances", paper_table(rows)),
        ("Paired comparisons: each run minus each baseline, same instances and seed",
         paired_table(rows)),
        ("GRR by object count", breakdown_table(rows, "by_objects", "objects")),
        ("GRR by goal size (goal atoms)", breakdown_table(rows, "by_goal_size", "atoms"))) if t]
    md = [f"# {title}", "", f"Generated {time.strftime('%Y-%m-%d %H:%M')}.", "", "## Table 1", "",
          markdown(*t1), ""]
    if t2:
        md += ["## Table 2: V_base vs V_generator", "", markdown(*t2), ""]
    for heading, t in more:
        md += [f"## {heading}", "", markdown(*t), ""]
    md += [f"![{p.stem}]({p.name})" for p in pngs]
    (out / "report.md").write_text("\n".join(md) + "\n")
    (out / "rows.json").write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;"
             "font-size:12px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}img{max-width:100%}figure{margin:1em 0}")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>Generated {time.strftime('%Y-%m-%d %H:%M')} from {len(rows)} runs. GRR: goal-reaching "
             "rate; BTR: share of instances whose proposed plan contains a bad transition; brackets: "
             "Wilson 95 % intervals.</p>", "<h2>Table 1</h2>", _html_table(*t1)]
    if t2:
        parts += ["<h2>Table 2: V_base vs V_generator</h2>", _html_table(*t2)]
    for heading, t in more:
        parts += [f"<h2>{html.escape(heading)}</h2>", _html_table(*t)]
    parts += ["<h2>Figures</h2>", *(_img(p) for p in pngs), "</body></html>"]
    page = out / "report.html"
    page.write_text("\n".join(parts))
    return page
