"""Fuzz (issue 15): a deterministic corpus of malformed and valid-but-unusual PDDL through every
entry point that reads PDDL — ``plansuite-equiv``, and the loaders of ``plansuite-data
domain=custom`` and ``plansuite-eval`` — in process for the whole corpus, plus a few real CLI runs.

Invalid input: no traceback, exit 1 (or a PDDLError in process) with one ``error:`` line naming the
file and the construct. Valid variants (case, comments, whitespace, reordering): read exactly as
the original, and judged equal to it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from pddl_corpus import (
    VALID_DOMAIN_VARIANTS,
    VALID_PROBLEM_VARIANTS,
    Case,
    malformed_domains,
    malformed_problems,
    valid_variants,
)

from plansuite.cli import CONF_DIR
from plansuite.cli import equiv as equiv_cli
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.domains.gripper import GripperStates
from plansuite.errors import PDDLError
from plansuite.pddl.model import Problem, problem_to_pddl
from plansuite.pddl.parse import load_domain, load_problem
from plansuite.pddl.simulator import GroundTask

REPO = Path(__file__).resolve().parents[1]
MAX_LINE = 600  # characters in one error line, whatever the input echoes


def _problems(name: str, n: int, seed: int) -> list[str]:
    domain = load_builtin(name)
    sampler = BlocksworldStates(3, 6) if name == "blocksworld" else GripperStates(1, 3, 3)
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        objects, init = sampler.sample(rng)
        _, other = sampler.sample(random.Random(rng.random()))
        goal = frozenset(a for a in other if set(a[1:]) <= set(objects) and rng.random() < 0.5)
        goal = goal or frozenset(sorted(init)[:1])
        texts.append(problem_to_pddl(Problem(f"p{i}", domain.name, objects, init, goal), domain))
    return texts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    """Every file written under one tmp dir; counts printed for the record."""
    root = tmp_path_factory.mktemp("fuzz")
    out: dict = {"problems": {"blocksworld": [], "gripper": []}, "domains": []}

    def write(folder: Path, case: Case) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{case.name}.pddl"
        path.write_bytes(case.data)
        return path

    for name, n in (("blocksworld", 10), ("gripper", 4)):
        for i, text in enumerate(_problems(name, n, seed=len(name))):
            folder = root / "problems" / name / f"base{i}"
            original = write(folder, Case("original", text.encode()))
            valid = [write(folder, c) for c in valid_variants(text, i, VALID_PROBLEM_VARIANTS)]
            bad = ([(write(folder / "bad", c), c) for c in malformed_problems(text, i)]
                   if name == "blocksworld" else [])
            out["problems"][name].append((original, valid, bad))
    for name in ("blocksworld", "gripper"):
        text = builtin_path(name).read_text()
        for seed in range(3):
            folder = root / "domains" / name / f"seed{seed}"
            valid = [write(folder, c) for c in valid_variants(text, seed, VALID_DOMAIN_VARIANTS)]
            bad = ([(write(folder / "bad", c), c) for c in malformed_domains(text, seed)]
                   if name == "blocksworld" else [])
            out["domains"].append((name, valid, bad))
    counts = {
        "problem files": sum(1 + len(v) + len(b) for group in out["problems"].values()
                             for _, v, b in group),
        "valid problem variants": sum(len(v) for group in out["problems"].values() for _, v, _ in group),
        "malformed problems": sum(len(b) for group in out["problems"].values() for _, _, b in group),
        "domain files": sum(len(v) + len(b) for _, v, b in out["domains"]),
        "valid domain variants": sum(len(v) for _, v, _ in out["domains"]),
        "malformed domains": sum(len(b) for _, _, b in out["domains"]),
    }
    print(f"\n[fuzz] corpus: {json.dumps(counts)}")
    assert counts["problem files"] >= 250 and counts["domain files"] >= 80
    out["counts"] = counts
    return out


def assert_one_line(message: str, path: Path, construct: str) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message, message[:300]
    assert message.startswith(str(path)) and len(message) <= MAX_LINE, message[:300]
    assert construct.lower() in message.lower(), (construct, message[:300])


def equiv(argv: list[str], capsys) -> tuple[int, dict | None, str]:
    """``plansuite-equiv`` in process: (exit code, JSON or None, stderr)."""
    try:
        equiv_cli.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


# ---- problems ---------------------------------------------------------------------------------
def test_valid_problem_variants_read_and_judge_like_the_original(corpus, capsys):
    for name, group in corpus["problems"].items():
        domain = load_builtin(name)
        for original, variants, _ in group:
            ref = load_problem(original, domain)
            ref_task = GroundTask(domain, ref)
            for path in variants:
                p = load_problem(path, domain)
                assert (p.name, p.domain_name, p.objects, p.init, p.goal_pos, p.goal_neg) == \
                    (ref.name, ref.domain_name, ref.objects, ref.init, ref.goal_pos, ref.goal_neg), path
                task = GroundTask(domain, p)
                assert (task.atoms, task.actions, task.init, task.goal_pos) == \
                    (ref_task.atoms, ref_task.actions, ref_task.init, ref_task.goal_pos), path
                for reference, generated in ((original, path), (path, original)):
                    code, result, err = equiv([str(reference), str(generated), "--domain", name],
                                              capsys)
                    assert code == 0 and not err, err
                    assert result["parse"] and result["structural"] and result["semantic"], result
                    assert result["mapping"] == {o: o for o in ref.objects}


def test_malformed_problems_are_one_line_errors_everywhere(corpus, capsys):
    domain = load_builtin("blocksworld")
    seen = 0
    for original, _, bad in corpus["problems"]["blocksworld"]:
        for path, case in bad:
            seen += 1
            # the loader behind plansuite-eval (instances=) and plansuite-data (domain.problems=)
            with pytest.raises(PDDLError) as info:
                load_problem(path, domain)
            assert_one_line(str(info.value), path, case.construct)
            # plansuite-equiv: as the reference, one error line and exit 1 ...
            code, _, err = equiv([str(path), str(original), "--domain", "blocksworld"], capsys)
            assert code == 1 and err.count("\n") == 1 and err.startswith("error: "), err[:300]
            assert_one_line(err[len("error: "):].strip(), path, case.construct)
            # ... and as the generated file (which may be anything): a verdict, never equal
            code, result, err = equiv([str(original), str(path), "--domain", "blocksworld"], capsys)
            assert code == 0 and not err, err[:300]
            assert result["structural"] is False and result["semantic"] is False, (case.name, result)
            if not result["parse"]:
                assert len(result["reasons"]["parse"]) <= MAX_LINE
    assert seen >= 200


# ---- domains ----------------------------------------------------------------------------------
def test_valid_domain_variants_read_like_the_original(corpus):
    for name, variants, _ in corpus["domains"]:
        original = load_builtin(name)
        for path in variants:
            d = load_domain(path)
            assert (d.name, d.requirements, d.types, d.constants, d.predicates, d.actions) == \
                (original.name, original.requirements, original.types, original.constants,
                 original.predicates, original.actions), path


def test_malformed_domains_are_one_line_errors(corpus):
    seen = 0
    for _, _, bad in corpus["domains"]:
        for path, case in bad:
            seen += 1
            with pytest.raises(PDDLError) as info:
                load_domain(path)
            assert_one_line(str(info.value), path, case.construct)
    assert seen >= 50


def run_hydra(module: str, config: str, overrides: list[str], capsys) -> tuple[int, str]:
    """A Hydra CLI's ``run`` in process: (exit code, stderr)."""
    import importlib

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name=config, overrides=overrides)
    try:
        importlib.import_module(module).run(cfg)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def test_data_and_eval_entry_points_refuse_each_malformed_kind(corpus, tmp_path, capsys):
    """One of each kind through ``plansuite-data domain=custom`` and ``plansuite-eval`` (in
    process: the same code as the commands, without the interpreter start-up)."""
    (original, _, bad_problems), = corpus["problems"]["blocksworld"][:1]
    (_, _, bad_domains), = [d for d in corpus["domains"] if d[0] == "blocksworld"][:1]
    good_domain = builtin_path("blocksworld")
    for path, case in bad_domains:
        code, err = run_hydra("plansuite.cli.data", "data", [
            "domain=custom", f"domain.file={path}", f"domain.problems={original.parent}",
            "dataset=tiny", f"out_dir={tmp_path / 'data' / case.name}"], capsys)
        assert code == 1 and err.count("\n") == 1 and err.startswith("error: "), (case.name, err)
        assert_one_line(err[7:].strip(), path, case.construct)
        assert not (tmp_path / "data" / case.name).exists()  # nothing half-written
    for path, case in bad_problems:
        folder = tmp_path / "instances" / case.name
        folder.mkdir(parents=True)
        (folder / "p0000.pddl").write_bytes(original.read_bytes())
        target = folder / "p0001.pddl"
        target.write_bytes(path.read_bytes())
        for module, config, extra in (
                ("plansuite.cli.eval", "eval", ["logger=none", "optimal.enabled=false",
                                                "planner=random_restart", f"instances={folder}",
                                                f"out_dir={tmp_path / 'eval' / case.name}"]),
                ("plansuite.cli.data", "data", ["dataset=tiny", f"domain.problems={folder}",
                                                f"out_dir={tmp_path / 'd2' / case.name}"])):
            code, err = run_hydra(module, config, ["domain=custom", f"domain.file={good_domain}",
                                                   *extra], capsys)
            assert code == 1 and err.count("\n") == 1, (module, case.name, err[:300])
            assert_one_line(err[7:].strip(), target, case.construct)


# ---- a handful of real command lines ------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env={**__import__("os").environ,
                                                      "HF_HUB_OFFLINE": "1"})


def test_real_command_lines(corpus, tmp_path, capsys):
    (original, variants, bad), = corpus["problems"]["blocksworld"][:1]
    bad = dict((case.name, path) for path, case in bad)
    # plansuite-equiv: an undecodable generated file is a verdict; a broken reference one line
    run = cli("plansuite.cli.equiv", str(original), str(bad["not-utf8"]), "--domain", "blocksworld")
    assert run.returncode == 0 and json.loads(run.stdout)["parse"] is False, run.stderr
    run = cli("plansuite.cli.equiv", str(bad["deep-nesting"]), str(original), "--domain",
              "blocksworld")
    assert run.returncode == 1 and run.stderr.startswith("error: ") and \
        run.stderr.count("\n") == 1 and "nesting deeper" in run.stderr, run.stderr[-500:]
    # plansuite-data domain=custom with a duplicate predicate
    (_, _, bad_domains), = [d for d in corpus["domains"] if d[0] == "blocksworld"][:1]
    dup = next(p for p, c in bad_domains if c.name == "duplicate-predicate")
    run = cli("plansuite.cli.data", "domain=custom", f"domain.file={dup}",
              f"domain.problems={original.parent}", f"out_dir={tmp_path / 'd'}")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith(f"error: {dup}:") and \
        "predicate clear: declared twice" in run.stderr
    # plansuite-eval on an upper-case domain and instance folder (every variant of one problem,
    # under the ids of a folder of plain copies evaluated in process): the same plans
    folders = {"UPPER": tmp_path / "UPPER", "plain": tmp_path / "plain"}
    for i, path in enumerate(variants):
        for name, folder in folders.items():
            folder.mkdir(exist_ok=True)
            (folder / f"p{i:04d}.pddl").write_bytes((path if name == "UPPER" else original)
                                                    .read_bytes())
    domain = tmp_path / "DOMAIN.PDDL"
    domain.write_text(builtin_path("blocksworld").read_text().upper())
    common = ["planner=random_restart", "planner.k=3", "logger=none", "optimal.enabled=false"]
    run = cli("plansuite.cli.eval", "domain=custom", f"domain.file={domain}",
              f"domain.problems={folders['UPPER']}", f"instances={folders['UPPER']}", *common,
              f"out_dir={tmp_path / 'e-upper'}")
    assert run.returncode == 0, run.stderr[-800:]
    code, _ = run_hydra("plansuite.cli.eval", "eval", [f"instances={folders['plain']}", *common,
                                                       f"out_dir={tmp_path / 'e-plain'}"], capsys)
    assert code == 0

    def plans(out: Path) -> list:
        return [(r["id"], r["outcome"], r["plan"]) for r in
                map(json.loads, (out / "instances.jsonl").read_text().splitlines())]

    assert plans(tmp_path / "e-upper") == plans(tmp_path / "e-plain")
    assert len(plans(tmp_path / "e-plain")) == len(variants)
