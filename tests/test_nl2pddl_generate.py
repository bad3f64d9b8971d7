"""``plansuite-nl2pddl task=generate`` on a domain the suite has never seen (tests/data/kitchen.pddl:
typed, 7 predicates): through the local backend (a tiny generator trained here on a few kitchen
pairs), through ``backend=openai`` against ``plansuite-serve`` and against a served model that
answers correctly (every check passes: parse, domain, Fast Downward, VAL, the LLM critic); resume;
bad descriptions files."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from serve_process import served

from plansuite.cli import CONF_DIR
from plansuite.cli.nl2pddl import run as nl2pddl_run
from plansuite.errors import ConfigError
from plansuite.nl2pddl.chat_server import ChatService, make_server
from plansuite.nl2pddl.judging.problem_checks import FLAGS
from plansuite.nl2pddl.loop.generate import GENERATE_LOG, read_descriptions
from plansuite.nl2pddl.loop.repair import STOP_RULES

KITCHEN = Path(__file__).parent / "data" / "kitchen.pddl"
PLACES, FOODS, TOOLS = ["counter", "hob", "table", "sink"], ["carrot", "onion", "leek"], ["knife", "cleaver"]
CARROT_SOUP = ("The cook stands at the counter with free hands. The hob is a stove. The carrot and the knife "
               "are on the counter. Cook the carrot and leave the knife on the counter.")
CARROT_PROBLEM = """(define (problem carrot-soup)
  (:domain kitchen)
  (:objects counter hob - place carrot - food knife - tool)
  (:init (cook-at counter) (hands-free) (stove hob) (item-at carrot counter) (item-at knife counter))
  (:goal (and (cooked carrot) (item-at knife counter))))"""


def kitchen_pair(rng: random.Random) -> tuple[str, str]:
    """A random kitchen scene: its description and its problem."""
    places = rng.sample(PLACES, 2)
    food, tool = rng.choice(FOODS), rng.choice(TOOLS)
    at_food, at_tool = rng.choice(places), rng.choice(places)
    text = (f"The cook is at the {places[0]} with free hands. The {places[1]} is a stove. "
            f"The {food} is on the {at_food} and the {tool} on the {at_tool}. Cook the {food}.")
    problem = (f"(define (problem kitchen)\n  (:domain kitchen)\n  (:objects {' '.join(places)} - place "
               f"{food} - food {tool} - tool)\n  (:init\n    (cook-at {places[0]})\n    (hands-free)\n"
               f"    (stove {places[1]})\n    (item-at {food} {at_food})\n    (item-at {tool} {at_tool})\n  )\n"
               f"  (:goal (and\n    (cooked {food})\n  ))\n)")
    return text, problem


def write_descriptions(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def generate(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("nl2pddl", ["task=generate", f"pddl_domain={KITCHEN}", *overrides])
    return nl2pddl_run(cfg)


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / GENERATE_LOG).read_text().splitlines()]


def assert_recorded(out: Path, ids: list[str]) -> list[dict]:
    """Every id has its problem file and one generate.jsonl line: attempts, each check's verdict, a stop."""
    rows = records(out)
    assert [r["id"] for r in rows] == ids
    for r in rows:
        assert (out / f"{r['id']}.pddl").read_text().strip() == r["attempts"][r["kept"] - 1]["text"].strip()
        assert r["stop"] in STOP_RULES and r["attempts"]
        for a in r["attempts"]:
            assert set(FLAGS) <= set(a) and "diagnostics" in a
    return rows


# ---- the descriptions file ----------------------------------------------------------------------
@pytest.mark.parametrize("lines, problem", [
    (['{"id": "a", "description": "x"}', "{not json"], "line 2: not JSON"),
    (['{"id": "a"}'], 'line 1: missing "description"'),
    (['{"description": "x"}'], 'line 1: missing "id"'),
    (['{"id": "a", "description": "x"}', '{"id": "A", "description": "y"}'], "line 2: id 'A' repeats line 1's"),
    (['{"id": "../etc/a", "description": "x"}'], "line 1: id '../etc/a' cannot name a file"),
    (['[1, 2]', '{"id": "b/c", "description": "x"}'], "line 1: not a JSON object (and 1 more bad row(s))"),
    ([""], "no description rows"),
])
def test_a_bad_descriptions_file_is_refused_in_one_line(tmp_path, lines, problem):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as info:
        read_descriptions(path)
    assert problem in str(info.value) and "\n" not in str(info.value)


def test_ids_may_be_integers_and_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": 7, "description": "x"}\n\n{"id": "k-2.b", "description": "y", "extra": 1}\n')
    assert [(r.id, r.description) for r in read_descriptions(path)] == [("7", "x"), ("k-2.b", "y")]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("plansuite-nl2pddl", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "plansuite.cli.nl2pddl"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "PLANSUITE_DEBUG": "", "OPENAI_API_KEY": "",
                               "PYTHONPATH": os.pathsep.join(sys.path)})


def test_cli_bad_file_and_missing_model_are_one_line_each(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "description": "x"}\n{"id": "a", "description": "y"}\n')
    proc = cli("task=generate", f"domain={KITCHEN}", f"descriptions={bad}", f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        f"error: {bad} line 2: id 'a' repeats line 1's"]
    assert not list((tmp_path / "out").glob("*"))  # refused before anything was written

    good = write_descriptions(tmp_path / "good.jsonl", [{"id": "a", "description": "x"}])
    proc = cli("task=generate", "domain=gripper", f"descriptions={good}", f"out_dir={tmp_path / 'out'}",
               cwd=tmp_path)  # no outputs/nl2pddl-cpu here
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "make nl2pddl-cpu" in proc.stderr and "backend.export=DIR" in proc.stderr
    proc = cli("task=generate", f"domain={KITCHEN}", f"descriptions={good}", f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 1 and "backend.export: required for a domain file" in proc.stderr
    proc = cli("task=generate", f"domain={tmp_path / 'nowhere.pddl'}", f"descriptions={good}",
               f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 1 and "neither a built-in domain" in proc.stderr


def test_a_bad_domain_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.pddl"
    bad.write_text("(define (domain broken)\n  (:predicates (p ?x)\n")
    descriptions = write_descriptions(tmp_path / "d.jsonl", [{"id": "a", "description": "x"}])
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("nl2pddl", ["task=generate", f"pddl_domain={bad}", f"descriptions={descriptions}",
                                  f"out_dir={tmp_path / 'out'}", "backend=openai", "backend.model=m"])
    with pytest.raises(SystemExit):
        nl2pddl_run(cfg)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: domain (line 2") and "syntax error" in err[0]
    assert not (tmp_path / "out").exists()


def test_a_built_in_domain_defaults_to_the_export_make_nl2pddl_cpu_trains(tmp_path, monkeypatch):
    from plansuite.cli.nl2pddl import _default_export

    monkeypatch.chdir(tmp_path)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("nl2pddl", ["task=generate", "pddl_domain=gripper"])
    with pytest.raises(ConfigError, match="no generator for 'gripper' at outputs/nl2pddl-cpu/generator/gripper"):
        _default_export(cfg, "gripper")
    export = tmp_path / "outputs" / "nl2pddl-cpu" / "generator" / "gripper" / "export"
    export.mkdir(parents=True)
    (export / "domain.pddl").write_text("(define (domain gripper))")
    _default_export(cfg, "gripper")
    assert cfg.backend.export == "outputs/nl2pddl-cpu/generator/gripper/export"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):  # a given export is kept
        cfg = compose("nl2pddl", ["task=generate", "pddl_domain=gripper", "backend.export=mine"])
    _default_export(cfg, "gripper")
    assert cfg.backend.export == "mine"


# ---- a served model that answers right: every check passes, and a killed run resumes -------------
class Oracle:
    """Writes the carrot problem (in prose and a fence, as chat models do) and, asked as a critic,
    says ``match``; counts both."""

    def __init__(self):
        self.problems = self.verdicts = 0

    def generate(self, description, domain_text, feedback):
        if "Problem:\n```pddl" in description:  # the critic's question
            self.verdicts += 1
            return "**Verdict:** match\nReason: every fact is stated."
        self.problems += 1
        return f"Here is the problem:\n```pddl\n{CARROT_PROBLEM}\n```"


@pytest.fixture
def oracle():
    model = Oracle()
    server = make_server(ChatService({"oracle": model}), port=0)
    import threading

    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield model, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_backend_and_llm_critic_pass_every_check_and_a_killed_run_resumes(oracle, tmp_path, capsys):
    model, url = oracle
    out = tmp_path / "out"
    rows = [{"id": "soup", "description": CARROT_SOUP}, {"id": 2, "description": CARROT_SOUP + " Quickly."}]
    descriptions = write_descriptions(tmp_path / "d.jsonl", rows)
    settings = [f"descriptions={descriptions}", f"out_dir={out}", "backend=openai", f"backend.base_url={url}",
                "backend.model=oracle", "backend.api_key_env=null", "critic=llm", "max_attempts=2"]
    summary = generate(*settings)
    assert summary == {"items": 2, "success": 2, "stops": {"success": 2}}
    for r in assert_recorded(out, ["soup", "2"]):
        (attempt,) = r["attempts"]
        assert {f: attempt[f] for f in FLAGS} == dict.fromkeys(FLAGS, True)
        assert attempt["plan"] and any(step.startswith("(cook carrot") for step in attempt["plan"])
    assert (model.problems, model.verdicts) == (2, 2)
    assert json.loads((out / "run.json").read_text())["critic"]["domain_file"] == str(KITCHEN)

    # killed while writing a third item's line: that line is torn, the item is redone, the others skipped
    write_descriptions(descriptions, [*rows, {"id": "third", "description": "Cook the carrot."}])
    with open(out / GENERATE_LOG, "a") as f:
        f.write('{"id": "third", "attem')
    assert generate(*settings)["items"] == 3
    assert [r["id"] for r in records(out)] == ["soup", "2", "third"]
    assert (model.problems, model.verdicts) == (3, 3)
    assert generate(*settings)["items"] == 3 and model.problems == 3  # all done: nothing asked

    capsys.readouterr()
    with pytest.raises(SystemExit):  # another attempt budget: refused in one line
        generate(*[s.replace("max_attempts=2", "max_attempts=3") for s in settings])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot resume" in err[0] and "max_attempts: 2 -> 3" in err[0]


def test_benchmark_rows_feed_generate_and_score_it_against_their_references(oracle, tmp_path, capsys):
    """Rows as public NL -> PDDL benchmarks publish them: natural_language, problem_pddl, flags."""
    model, url = oracle
    other = CARROT_PROBLEM.replace("(item-at knife counter))))", "(item-at knife hob))))")
    bench = write_descriptions(tmp_path / "bench.jsonl", [
        {"id": 0, "domain": "kitchen", "natural_language": CARROT_SOUP, "problem_pddl": CARROT_PROBLEM,
         "init_is_abstract": 0, "goal_is_abstract": 0},
        {"id": 1, "domain": "kitchen", "natural_language": "Make soup.", "problem_pddl": other,
         "init_is_abstract": 1, "goal_is_abstract": 1}])
    out = tmp_path / "gen"
    generate(f"descriptions={bench}", f"out_dir={out}", "backend=openai", f"backend.base_url={url}",
             "backend.model=oracle", "max_attempts=1")
    assert [r["id"] for r in records(out)] == ["0", "1"] and model.problems == 2
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("nl2pddl", ["task=score", f"pddl_domain={KITCHEN}", f"references={bench}", f"out_dir={out}"])
    metrics = nl2pddl_run(cfg)
    (explicit,), (abstract,) = metrics["by_style"]["explicit"], metrics["by_style"]["abstract"]
    assert explicit["success"] == 1.0 and explicit["semantic"] == 1.0  # the oracle's problem is row 0's
    assert abstract["success"] == 1.0 and abstract["semantic"] == 0.0  # operational success, wrong goal
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [(s["item"], s["structural"]) for s in scores] == [("0", True), ("1", False)]

    no_reference = write_descriptions(tmp_path / "plain.jsonl", [{"id": 0, "description": CARROT_SOUP}])
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("nl2pddl", ["task=score", f"pddl_domain={KITCHEN}", f"references={no_reference}",
                                  f"out_dir={out}"])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        nl2pddl_run(cfg)
    assert capsys.readouterr().err.strip() == (f"error: {no_reference}: row '0' has no reference problem "
                                               '("problem" or "problem_pddl": PDDL text)')


def test_a_critic_reply_without_a_verdict_is_recorded_not_raised(oracle, tmp_path):
    model, url = oracle
    model.generate = lambda description, domain_text, feedback: (
        "I think it is fine?" if "Problem:\n```pddl" in description else CARROT_PROBLEM)
    out = tmp_path / "out"
    descriptions = write_descriptions(tmp_path / "d.jsonl", [{"id": "soup", "description": CARROT_SOUP}])
    summary = generate(f"descriptions={descriptions}", f"out_dir={out}", "backend=openai",
                       f"backend.base_url={url}", "backend.model=oracle", "critic=llm")
    (r,) = assert_recorded(out, ["soup"])
    (attempt,) = r["attempts"]
    assert attempt["critic_accepted"] is None and attempt["plan_valid"] is True and r["stop"] == "success"
    assert [d["kind"] for d in attempt["diagnostics"]] == ["critic-no-verdict"]
    assert "I think it is fine?" in attempt["diagnostics"][0]["message"] and summary["success"] == 1


# ---- a generator trained on the new domain: the local backend and plansuite-serve ----------------
@pytest.fixture(scope="module")
def kitchen_export(tmp_path_factory, train_problem_generator):
    """A tiny problem generator trained for 40 steps of 8 on 40 random kitchen pairs (validated once)."""
    data = tmp_path_factory.mktemp("kitchen") / "data"
    (data / "pairs").mkdir(parents=True)
    shutil.copyfile(KITCHEN, data / "domain.pddl")
    (data / "manifest.json").write_text(json.dumps({"kind": "nl2pddl", "dataset": "kitchen"}))
    rng = random.Random(0)
    for split, n in (("train", 40), ("val", 4)):
        with open(data / "pairs" / f"{split}.jsonl", "w") as f:
            for i in range(n):
                description, problem = kitchen_pair(rng)
                f.write(json.dumps({"id": f"{split}-{i}", "problem_id": f"{split}-{i}", "group": "g",
                                    "style": "explicit", "init_scene": "", "goal_scene": "",
                                    "description": description, "problem": problem}) + "\n")
    return train_problem_generator(data, data.parent / "pg", 40, 160, "model.batch_size=8", "model.epochs=100",
                                   "model.optim.lr=3e-3", "model.optim.warmup_steps=5",
                                   "+trainer.check_val_every_n_epoch=100")


@pytest.mark.slow
def test_local_backend_on_the_new_domain(kitchen_export, tmp_path):
    out = tmp_path / "out"
    descriptions = write_descriptions(tmp_path / "d.jsonl", [
        {"id": "soup", "description": CARROT_SOUP},
        {"id": "leek", "description": "The cook is at the sink with free hands. The table is a stove. "
                                      "The leek and the cleaver are on the sink. Cook the leek."}])
    # the critic is the generator itself (its likelihood of the candidate), no critic model of the domain
    summary = generate(f"descriptions={descriptions}", f"out_dir={out}", f"backend.export={kitchen_export}",
                       "critic=likelihood", "critic.threshold=0.5", "max_attempts=2", "backend.samples=2",
                       "check_rewrites=true")
    assert summary["items"] == 2
    for r in assert_recorded(out, ["soup", "leek"]):
        for a in r["attempts"]:
            # the decoder is constrained by the domain file alone: every candidate parses and fits the domain
            assert a["parsed"] is True and a["domain_consistent"] is True
            assert a["solvable"] is not None or any(d["kind"].startswith("planner") for d in a["diagnostics"])
            assert a["critic_accepted"] in (True, False)
        if r["attempts"][0]["critic_accepted"] is False:  # a rejection is repaired, or the loop says why not
            assert len(r["attempts"]) == 2 or r["stop"] in ("unchanged", "no-feedback")


@pytest.mark.slow
def test_openai_backend_against_plansuite_serve_on_the_new_domain(kitchen_export, tmp_path):
    with served(f"kitchen={kitchen_export}", "--port", "0", PYTHONPATH=os.pathsep.join(sys.path)) as url:
        out = tmp_path / "out"
        descriptions = write_descriptions(tmp_path / "d.jsonl", [{"id": "soup", "description": CARROT_SOUP}])
        summary = generate(f"descriptions={descriptions}", f"out_dir={out}", "backend=openai",
                           f"backend.base_url={url}", "backend.model=kitchen", "backend.api_key_env=null",
                           "backend.timeout_s=60", "max_attempts=2")
        assert summary["items"] == 1
        (r,) = assert_recorded(out, ["soup"])
        first = r["attempts"][0]
        assert first["parsed"] is True and first["domain_consistent"] is True
        assert first["solvable"] is not None or any(d["kind"].startswith("planner") for d in first["diagnostics"])
