"""``task=generate``: problems for a file of descriptions, for any domain, with no reference.

Input: a domain (a built-in name or a domain file, :func:`resolve_domain`) and a JSONL file of
``{"id": ..., "description": ...}`` rows (:func:`read_descriptions`). Each description goes
through the repair loop (:func:`~plansuite.nl2pddl.loop.repair.repair`: generate, check, feed the
diagnostics back, until a stop rule), and the output folder gets::

    <id>.pddl        the candidate that got furthest through the checks (the last such attempt)
    generate.jsonl   one line per id: the stop reason, ``kept`` (the attempt written), ``success``,
                     and every attempt with its text, feedback, each check's verdict (parsed,
                     domain_consistent, solvable, plan_valid, critic_accepted: null where a check
                     did not run or the critic gave no verdict), diagnostics and plan

The line is appended (and synced) after the item's file is written, so a killed run resumes by
skipping the ids already in ``generate.jsonl``; ``run.json`` keeps the settings, and a resume
under other ones is refused (:func:`~plansuite.nl2pddl.loop.experiment.start_run`).

Rows may also be in the shape public NL → PDDL benchmarks publish them (:data:`ALIASES`: the
description as ``natural_language``, the reference as ``problem_pddl``, ``init_is_abstract`` /
``goal_is_abstract`` flags): such a file feeds ``task=generate`` as it is, and ``task=score
references=FILE`` scores the run against its references (:func:`reference_pairs`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from plansuite.domains import BUILTIN, builtin_path
from plansuite.errors import ConfigError
from plansuite.jsonl import append_lines, complete_lines, write_atomic
from plansuite.nl2pddl.data.dataset import Pair
from plansuite.nl2pddl.decoding.generators import ProblemGenerator
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.repair import RepairResult, check_rank, repair
from plansuite.progress import eta, format_eta

GENERATE_LOG = "generate.jsonl"
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# field -> the names it has in public benchmarks' rows (the suite's own name first)
ALIASES = {"description": ("description", "natural_language"), "problem": ("problem", "problem_pddl")}
ABSTRACT_FLAGS = ("init_is_abstract", "goal_is_abstract")


def field(row: dict, name: str):
    """``row``'s value for ``name`` under its first alias present (``None``: none is).

    >>> field({"natural_language": "Two blocks."}, "description")
    'Two blocks.'
    """
    return next((row[k] for k in ALIASES.get(name, (name,)) if k in row), None)


def row_style(row: dict) -> str:
    """``style``, else ``abstract`` when a benchmark flags the init or the goal abstract.

    >>> row_style({"init_is_abstract": 0, "goal_is_abstract": 1}), row_style({"natural_language": "x"})
    ('abstract', 'explicit')
    """
    if isinstance(row.get("style"), str) and row["style"]:
        return row["style"]
    return "abstract" if any(row.get(k) for k in ABSTRACT_FLAGS) else "explicit"


@dataclass(frozen=True)
class DescriptionRow:
    id: str
    description: str
    row: dict  # the whole row (a benchmark's reference problem and flags, when it has them)


def resolve_domain(value: str | None) -> tuple[Path, str | None]:
    """The domain file for ``domain=VALUE`` and the built-in name (``None`` for a file).

    >>> path, name = resolve_domain("gripper")
    >>> path.name, name
    ('gripper.pddl', 'gripper')
    >>> resolve_domain("no-such-domain")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: domain=no-such-domain: neither a built-in domain (blocksworld, gripper, logistics, fuel-delivery, timed-delivery) nor a file
    """
    if not value:
        raise ConfigError("domain: required for task=generate (a built-in domain's name or a domain file)")
    if value in BUILTIN:
        return builtin_path(value), value
    if Path(value).is_file():
        return Path(value), None
    raise ConfigError(f"domain={value}: neither a built-in domain ({', '.join(BUILTIN)}) nor a file")


def row_problem(row: object, seen: dict[str, int]) -> str | None:
    """What is wrong with one parsed row (``seen``: lower-cased ids so far -> their line), or None.

    >>> row_problem({"id": "k1", "description": "A pan."}, {})
    >>> row_problem({"id": "../k1", "description": "A pan."}, {})
    "id '../k1' cannot name a file (letters, digits, '.', '_', '-', starting with a letter or digit, at most 100)"
    >>> row_problem({"id": "K1", "description": "A pan."}, {"k1": 2})
    "id 'K1' repeats line 2's"
    >>> row_problem({"id": "k2", "description": " "}, {})
    'missing "description" (or "natural_language": a non-empty string)'
    """
    if not isinstance(row, dict):
        return "not a JSON object"
    if not isinstance(row.get("id"), (str, int)) or isinstance(row.get("id"), bool) or row.get("id") == "":
        return 'missing "id" (a string or an integer)'
    if not isinstance(field(row, "description"), str) or not field(row, "description").strip():
        return 'missing "description" (or "natural_language": a non-empty string)'
    ident = str(row["id"])
    if not SAFE_ID.fullmatch(ident):
        return (f"id {ident!r} cannot name a file (letters, digits, '.', '_', '-', starting with a "
                "letter or digit, at most 100)")
    if ident.lower() in seen:  # ids that differ in case only would share a file on some systems
        return f"id {ident!r} repeats line {seen[ident.lower()]}'s"
    return None


def read_descriptions(path: str | Path | None) -> list[DescriptionRow]:
    """The rows of a descriptions file; a file with any bad row is refused in one line naming the
    first (and how many more there are), before any model loads: a run that skipped them would
    leave problems silently missing."""
    if not path:
        raise ConfigError('descriptions: required for task=generate (a JSONL file of {"id", "description"} rows)')
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"descriptions={path}: no such file")
    rows: list[DescriptionRow] = []
    seen: dict[str, int] = {}
    bad: list[str] = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(f"line {number}: not JSON ({exc.msg})")
            continue
        problem = row_problem(row, seen)
        if problem:
            bad.append(f"line {number}: {problem}")
            continue
        seen[str(row["id"]).lower()] = number
        rows.append(DescriptionRow(str(row["id"]), field(row, "description"), row))
    if bad:
        more = f" (and {len(bad) - 1} more bad row(s))" if len(bad) > 1 else ""
        raise ConfigError(f"{path} {bad[0]}{more}")
    if not rows:
        raise ConfigError(f"{path}: no description rows")
    return rows


def reference_pairs(path: str | Path | None) -> list[Pair]:
    """A descriptions file whose rows carry reference problems, as pairs to score a run against
    (``task=score references=FILE``); a row without one is refused in one line."""
    rows = read_descriptions(path)
    missing = [r.id for r in rows if not isinstance(field(r.row, "problem"), str)]
    if missing:
        raise ConfigError(f"{path}: row {missing[0]!r} has no reference problem (\"problem\" or "
                          "\"problem_pddl\": PDDL text)" + (f", nor {len(missing) - 1} more" if len(missing) > 1 else ""))
    return [Pair(r.id, str(r.row.get("problem_id", r.id)), str(r.row.get("group", "")), row_style(r.row),
                 str(r.row.get("init_scene", "")), str(r.row.get("goal_scene", "")), r.description,
                 field(r.row, "problem")) for r in rows]


def attempt_records(log: Path) -> list[dict]:
    """``generate.jsonl`` as the attempt rows of a ``task=repair`` log (``item``, the attempt's
    fields, ``stop`` on the last), for :func:`~plansuite.nl2pddl.loop.experiment.score_run`."""
    out = []
    for line in complete_lines(log):
        record = json.loads(line)
        for a in record["attempts"]:
            last = a["attempt"] == len(record["attempts"])
            out.append({"item": record["id"], **a, "stop": record["stop"] if last else None})
    return out


def kept_attempt(result: RepairResult) -> int:
    """The attempt to write: the one that got furthest through the checks, the last of equals."""
    return max(result.attempts, key=lambda a: (check_rank(a.report), a.number)).number


def done_ids(out_dir: Path) -> set[str]:
    """Ids already in ``generate.jsonl`` (a torn last line, from a kill, is not one)."""
    return {json.loads(line)["id"] for line in complete_lines(out_dir / GENERATE_LOG) if line.strip()}


def run_generate(rows: list[DescriptionRow], generator: ProblemGenerator, checker: OperationalChecker,
                 out_dir: str | Path, max_attempts: int, check_rewrites: bool = False,
                 rewrite_order: str = "critic", progress: Callable[[str], None] = print) -> dict:
    """Write ``<id>.pddl`` and a ``generate.jsonl`` line for each row not done yet; the stop counts."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = done_ids(out_dir)
    todo = [r for r in rows if r.id not in done]
    if done:
        progress(f"[generate] resuming: {len(done)} id(s) already in {GENERATE_LOG}, {len(todo)} to go")
    start = time.perf_counter()
    for i, row in enumerate(todo, start=1):
        result = repair(row.description, generator, checker, max_attempts, check_rewrites=check_rewrites,
                        rewrite_order=rewrite_order)
        kept = kept_attempt(result)
        attempt = result.attempts[kept - 1]
        write_atomic(out_dir / f"{row.id}.pddl", attempt.text.rstrip() + "\n")
        append_lines(out_dir / GENERATE_LOG, [json.dumps(
            {"id": row.id, "file": f"{row.id}.pddl", "stop": result.stop, "kept": kept,
             "success": attempt.report.success, "attempts": [a.as_dict() for a in result.attempts]},
            sort_keys=True)])
        elapsed = time.perf_counter() - start
        progress(f"[generate] {i}/{len(todo)} {row.id}: {len(result.attempts)} attempt(s), stop={result.stop}, "
                 f"kept attempt {kept} ({elapsed:.0f}s, ETA {format_eta(eta(i, len(todo), elapsed))})")
    records = [json.loads(line) for line in complete_lines(out_dir / GENERATE_LOG) if line.strip()]
    stops: dict[str, int] = {}
    for r in records:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    return {"items": len(records), "success": sum(bool(r["success"]) for r in records),
            "stops": dict(sorted(stops.items()))}
