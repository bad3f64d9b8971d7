"""Problems written elsewhere: the instance folder's own domain, and object names renamed at the
model boundary (the adapters), so a model only sees the names it was trained on and plans come
out in the instance's own names."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR
from plansuite.cli import eval as eval_cli
from plansuite.data.augment import boundary_mapping, rename_atoms, rename_codec_text
from plansuite.data.load import Instance, load_instances
from plansuite.data.verifier_recipes import verifier_input
from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.models.export import check_export_domain
from plansuite.pddl.codec import format_prompt, parse_completion
from plansuite.pddl.model import Problem, atom_text, structure_difference
from plansuite.pddl.parse import load_domain, parse_domain
from plansuite.pddl.plans import read_plan
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.adapters import ModelGenerator, ModelVerifier, check_instance_names
from plansuite.planning.protocols import GenRequest, VerifyRequest

# Blocksworld as written elsewhere: other predicate and action names, other parameter names.
OTHER_BLOCKSWORLD = """(define (domain blocks)
  (:requirements :strips)
  (:predicates (on ?x ?y) (ontable ?x) (clear ?x) (handempty) (holding ?x))
  (:action pick-up :parameters (?x)
    :precondition (and (clear ?x) (ontable ?x) (handempty))
    :effect (and (not (ontable ?x)) (not (clear ?x)) (not (handempty)) (holding ?x)))
  (:action put-down :parameters (?x)
    :precondition (holding ?x)
    :effect (and (not (holding ?x)) (clear ?x) (handempty) (ontable ?x)))
  (:action stack :parameters (?x ?y)
    :precondition (and (holding ?x) (clear ?y))
    :effect (and (not (holding ?x)) (not (clear ?y)) (clear ?x) (handempty) (on ?x ?y)))
  (:action unstack :parameters (?x ?y)
    :precondition (and (on ?x ?y) (clear ?x) (handempty))
    :effect (and (holding ?x) (clear ?y) (not (clear ?x)) (not (handempty)) (not (on ?x ?y)))))
"""

PROBLEMS = {  # (init facts, goal facts): goals of one to four `on` facts
    "p1": ("(ontable a) (ontable b) (ontable c) (ontable d) (clear a) (clear b) (clear c) (clear d)",
           "(on a b)"),
    "p2": ("(on a b) (ontable b) (ontable c) (on d c) (clear a) (clear d)", "(on b d) (on c a)"),
    "p3": ("(ontable a) (on b a) (on c b) (on d c) (clear d)", "(on a b) (on b c) (on c d)"),
}


def write_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "domain.pddl").write_text(OTHER_BLOCKSWORLD)
    for name, (init, goal) in PROBLEMS.items():
        (folder / f"{name}.pddl").write_text(
            f"(define (problem {name}) (:domain blocks) (:objects a b c d)\n"
            f"  (:init (handempty) {init})\n  (:goal (and {goal})))\n")
    return folder


@pytest.fixture()
def folder(tmp_path) -> Path:
    return write_folder(tmp_path / "problems")


def evaluate_cli(*overrides: str) -> dict | None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="eval", overrides=["logger=none", "optimal.enabled=false",
                                                     "progress_every_s=1000", "val=false",
                                                     *overrides])
    return eval_cli.run(cfg)


# ---- the renaming: round trips, identity, too many objects ------------------------------------
MODEL = {"object": [f"b{i}" for i in range(1, 9)]}


@pytest.mark.parametrize("names", [
    ["a", "b", "c", "d"],  # letters
    ["red", "table-block", "green"],  # words
    ["the-big-red-block", "block_number_2", "b10x", "block.3"],  # several tokens each
    ["a", "b3", "b1"],  # some names the model knows, some not
])
def test_renaming_round_trips_instance_names_through_model_names(names):
    objects = dict.fromkeys(names, "object")
    forward = boundary_mapping(objects, MODEL, "p")
    back = {v: k for k, v in forward.items()}
    assert {forward.get(n, n) for n in names} <= set(MODEL["object"])  # the model sees its names
    assert len({forward.get(n, n) for n in names}) == len(names)  # injective
    atoms = tuple(f"(on {x} {y})" for x, y in zip(names, names[1:], strict=False))
    text = "ACTION:\n(pickup {0})\nNEXT STATE:\n(holding {0})\n{1}\nEND".format(
        forward.get(names[0], names[0]), "\n".join(rename_atoms(atoms, forward)))
    step = parse_completion(rename_codec_text(text, back))
    assert step.action == f"(pickup {names[0]})" and set(step.next_state) == {
        f"(holding {names[0]})", *atoms}
    assert boundary_mapping(objects, MODEL, "p") == forward  # deterministic


def test_renaming_is_type_preserving_and_natural_ordered():
    model = {"ball": ["ball1", "ball2", "ball10"], "room": ["rooma", "roomb"], "gripper": ["left", "right"]}
    objects = {"red": "ball", "blue": "ball", "kitchen": "room", "hall": "room",
               "left": "gripper", "right": "gripper"}
    forward = boundary_mapping(objects, model, "p")
    # natural order on both sides; the grippers' names are known, so they stay
    assert forward["blue"] == "ball1" and forward["red"] == "ball2"
    assert forward["hall"] == "rooma" and forward["kitchen"] == "roomb"
    assert "left" not in forward and "right" not in forward
    objects = {f"o{i}": "ball" for i in (10, 2, 1)}
    assert boundary_mapping(objects, model, "p") == {"o1": "ball1", "o2": "ball2", "o10": "ball10",
                                                     "ball1": "o1", "ball2": "o2", "ball10": "o10"}


def test_a_model_name_the_instance_does_not_use_maps_back_to_no_object_of_it():
    objects = {"a": "object", "b3": "object"}
    back = {v: k for k, v in boundary_mapping(objects, {"object": ["b1", "b2", "b3"]}, "p").items()}
    out = rename_codec_text("ACTION:\n(pickup b3)\nNEXT STATE:\n(holding b3)\nEND", back)
    assert parse_completion(out).action not in ("(pickup a)", "(pickup b3)")


def test_more_objects_than_the_model_knows_is_one_line():
    objects = {f"x{i}": "object" for i in range(10)}
    with pytest.raises(ConfigError) as err:
        boundary_mapping(objects, MODEL, "p0007")
    message = str(err.value)
    assert "\n" not in message and "instance p0007: 10 objects of type 'object'" in message
    assert "knows 8 names" in message
    with pytest.raises(ConfigError, match="0 names of that type"):
        boundary_mapping({"left": "gripper"}, MODEL, "p")


# ---- the adapters: a stand-in model that only speaks its own names ------------------------------
@dataclass
class Generated:
    text: str
    n_tokens: int


class ShortestPathPolicy:
    """A perfect generator over its own names: breadth-first search from the prompt's state to
    its goal, in ``domain``; it fails the test when a prompt names an object it was not trained on."""

    def __init__(self, domain, names: list[str], garbage: str | None = None):
        self.domain, self.names, self.garbage = domain, names, garbage
        self.meta = {"object_names": {"object": names}, "tokenizer": "bpe"}
        self.prompts: list[str] = []

    def generate(self, prompts, temperature, top_p, max_new_tokens, seed, exclude_actions=None):
        self.prompts.extend(prompts)
        return [Generated(self.garbage or self.step(p), 1) for p in prompts]

    def step(self, prompt: str) -> str:
        lines = prompt.splitlines()
        cut = lines.index("STATE:")
        goal, state = lines[1:cut], lines[cut + 1:]
        used = {x for line in goal + state for x in line[1:-1].split()[1:]}
        assert used <= set(self.names), f"the model saw names it does not know: {used}"
        parse = [tuple(a[1:-1].split()) for a in goal + state]
        task = GroundTask(self.domain, Problem("q", "d", dict.fromkeys(used, "object"),
                                               frozenset(parse[len(goal):]), frozenset(parse[:len(goal)])))
        start = task.encode(state)
        parent, queue = {start: None}, deque([start])
        while queue:
            s = queue.popleft()
            if task.is_goal(s):
                break
            for action, t in task.successors(s):
                if t not in parent:
                    parent[t] = (s, action)
                    queue.append(t)
        while parent[s][0] != start:
            s = parent[s][0]
        action = task.actions[parent[s][1]]
        return "ACTION:\n" + action + "\nNEXT STATE:\n" + "\n".join(task.decode(s)) + "\nEND"


class RecordingScorer:
    threshold = 0.5
    input_kind = "state_action_next"

    def __init__(self, names: list[str] | None):
        self.meta = {"object_names": {"object": names}} if names else {}
        self.texts: list[str] = []

    def score(self, texts):
        self.texts.extend(texts)
        return [1.0] * len(texts)


def instance_of(folder: Path, name: str, domain) -> Instance:
    return next(i for i in load_instances(folder, domain) if i.id == name)


def test_plans_come_out_in_the_instances_names(folder, monkeypatch, tmp_path):
    domain = load_domain(folder / "domain.pddl")
    policy = ShortestPathPolicy(domain, [f"b{i}" for i in range(1, 7)])
    scorer = RecordingScorer([f"b{i}" for i in range(1, 7)])
    monkeypatch.setattr(eval_cli, "load_generator", lambda *a, **k: ModelGenerator(policy))
    monkeypatch.setattr(eval_cli, "load_verifier", lambda *a, **k: ModelVerifier(scorer))
    out = tmp_path / "eval"
    results = evaluate_cli("generator=random", f"instances={folder}", f"out_dir={out}",
                           "planner=generator_verifier", "planner.k=1")
    assert results["grr"] == 1.0 and results["n_instances"] == 3
    assert policy.prompts and all("(on b" in p or "(ontable b" in p for p in policy.prompts)
    assert all(" a)" not in t and " a " not in t for t in scorer.texts)  # the verifier: b1..b6 too
    for name in PROBLEMS:
        plan = read_plan(out / "plans" / f"{name}.plan")
        used = {x for step in plan for x in step[1:-1].split()[1:]}
        assert plan and used <= {"a", "b", "c", "d"}
        task = GroundTask(domain, instance_of(folder, name, domain).problem)
        assert task.check_plan(plan).valid


def test_known_names_leave_prompts_and_verifier_inputs_byte_identical():
    domain = load_builtin("blocksworld")
    problem = Problem("p", domain.name, {f"b{i}": "object" for i in (1, 2, 3)},
                      frozenset({("arm-empty",), ("on-table", "b1"), ("on", "b2", "b1"),
                                 ("on-table", "b3"), ("clear", "b2"), ("clear", "b3")}),
                      frozenset({("on", "b1", "b3")}))
    task = GroundTask(domain, problem)
    state = tuple(sorted(map(atom_text, problem.init)))
    request = GenRequest("p", (0, 0), ("(on b1 b3)",), state, 7, task=task,
                         exclude_actions=("(pickup b3)",))
    policy = ShortestPathPolicy(domain, [f"b{i}" for i in range(1, 9)])
    proposal = ModelGenerator(policy).propose([request])[0]
    assert policy.prompts == [format_prompt(request.goal, request.state)] == [request.prompt]
    assert proposal.text == policy.step(request.prompt)  # the answer untouched too
    scorer = RecordingScorer([f"b{i}" for i in range(1, 9)])
    step = parse_completion(proposal.text)
    ModelVerifier(scorer).score([VerifyRequest("p", (0, 0), state, step.action, step.next_state, task)])
    assert scorer.texts == [verifier_input("state_action_next", state, step.action, step.next_state)]


def test_garbage_from_the_model_stays_garbage(folder):
    domain = load_domain(folder / "domain.pddl")
    inst = instance_of(folder, "p1", domain)
    task = GroundTask(domain, inst.problem)
    garbage = "ACTION:\n(pick-up b7 zz\n(\n[UNK]\nNEXT STATE:\n(holding b7)\n()\nEND"
    policy = ShortestPathPolicy(domain, [f"b{i}" for i in range(1, 9)], garbage=garbage)
    request = GenRequest("p1", (0, 0), ("(on a b)",), tuple(task.decode(task.init)), 0, task=task)
    text = ModelGenerator(policy).propose([request])[0].text
    assert "(holding b7)" in text and "[UNK]" in text and "zz" in text  # b7 is no object of p1
    assert not parse_completion(text)


def test_too_many_objects_is_refused_before_planning(folder):
    domain = load_domain(folder / "domain.pddl")
    policy = ShortestPathPolicy(domain, ["b1", "b2", "b3"])
    with pytest.raises(ConfigError, match=r"instance p1: 4 objects of type 'object', but the model "
                                          r"knows 3 names"):
        check_instance_names([ModelGenerator(policy), None], load_instances(folder, domain), domain)


def test_malformed_object_names_are_one_line(folder):
    domain = load_domain(folder / "domain.pddl")
    policy = ShortestPathPolicy(domain, [])
    policy.meta = {"object_names": ["b1", "b2"]}
    with pytest.raises(ConfigError, match=r"object_names in the export's plansuite.json: expected"):
        check_instance_names([ModelGenerator(policy)], load_instances(folder, domain), domain)


def test_an_export_without_object_names_uses_its_atom_vocabulary(folder):
    domain = load_domain(folder / "domain.pddl")

    class Vocabulary:
        def get_vocab(self):
            return {"GOAL:": 0, "(ontable b1)": 1, "(on b2 b1)": 2, "(pick-up b3)": 3, "(on b4 b3)": 4}

    scorer = RecordingScorer(None)
    scorer.meta, scorer.tokenizer = {"tokenizer": "atom"}, Vocabulary()
    inst = instance_of(folder, "p1", domain)
    task = GroundTask(domain, inst.problem)
    ModelVerifier(scorer).score([VerifyRequest("p1", (0, 0), ("(clear d)",), "(pick-up a)", (), task)])
    assert scorer.texts == ["STATE:\n(clear b4)\nACTION:\n(pick-up b1)\nNEXT STATE:"]


# ---- the folder's own domain --------------------------------------------------------------------
def test_plansuite_eval_plans_against_the_folders_own_domain(folder, tmp_path, capsys):
    out = tmp_path / "rr"
    results = evaluate_cli("planner=random_restart", "planner.k=20", f"instances={folder}",
                           f"out_dir={out}")
    assert f"[eval] domain: {folder / 'domain.pddl'}" in capsys.readouterr().out
    assert results["n_instances"] == 3 and results["grr"] > 0 and results["btr"] == 0
    record = json.loads((out / "instances.jsonl").read_text().splitlines()[0])
    assert record["plan"] and all(step.split()[0] in ("(pick-up", "(put-down", "(stack", "(unstack")
                                  for step in record["plan"])


def test_an_explicit_domain_file_that_is_not_the_folders_is_one_line(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("PLANSUITE_DEBUG", "1")  # the error itself, not the CLI's exit
    with pytest.raises(ConfigError) as err:
        evaluate_cli("planner=random_restart", f"instances={folder}", f"out_dir={tmp_path / 'o'}",
                     "domain=custom", f"domain.file={builtin_path('blocksworld')}",
                     f"domain.problems={folder}")
    assert "\n" not in str(err.value) and "predicates differ" in str(err.value)
    assert str(err.value).startswith(f"{folder / 'domain.pddl'}: not the domain of domain.file=")
    # the same domain written with other parameter names is the same domain
    same = tmp_path / "same.pddl"
    same.write_text(OTHER_BLOCKSWORLD.replace("?x", "?ob"))
    results = evaluate_cli("planner=random_restart", "planner.k=2", f"instances={folder}",
                           f"out_dir={tmp_path / 'o2'}", "domain=custom", f"domain.file={same}",
                           f"domain.problems={folder}")
    assert results["n_instances"] == 3


def fake_export(path: Path, domain_text: str | None, name: str, kind: str = "generator") -> Path:
    path.mkdir(parents=True)
    (path / "plansuite.json").write_text(json.dumps({"format": 1, "kind": kind, "domain": name}))
    if domain_text is not None:
        (path / "domain.pddl").write_text(domain_text)
    return path


def test_an_export_of_another_domain_is_refused_by_structure(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("PLANSUITE_DEBUG", "1")  # the error itself, not the CLI's exit
    builtin = builtin_path("blocksworld").read_text()
    export = fake_export(tmp_path / "gen", builtin, "blocks")  # same name, other structure
    with pytest.raises(ConfigError) as err:
        evaluate_cli(f"generator={export}", f"instances={folder}", f"out_dir={tmp_path / 'o'}",
                     "planner=generator")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"generator={export}: trained on another domain")
    assert "predicates differ" in message and "arm-empty/0" in message and "handempty/0" in message
    verifier = fake_export(tmp_path / "ver", builtin, "blocksworld-4ops", kind="verifier")
    with pytest.raises(ConfigError, match=f"verifier={verifier}: trained on another domain"):
        evaluate_cli("generator=random", f"verifier={verifier}", f"instances={folder}",
                     f"out_dir={tmp_path / 'o'}")


def test_export_domains_compare_by_structure_or_by_name_without_a_domain_file(folder, tmp_path):
    domain = load_domain(folder / "domain.pddl")
    renamed = OTHER_BLOCKSWORLD.replace("(domain blocks)", "(domain other)").replace("?y", "?under")
    meta = check_export_domain(fake_export(tmp_path / "a", renamed, "other"), "generator", domain, "k")
    assert meta["kind"] == "generator"  # same structure: accepted whatever its name
    stack_changed = OTHER_BLOCKSWORLD.replace("(and (holding ?x) (clear ?y))", "(holding ?x)")
    with pytest.raises(ConfigError, match="actions differ: stack not the same in both"):
        check_export_domain(fake_export(tmp_path / "b", stack_changed, "blocks"), "generator",
                            domain, "k")
    check_export_domain(fake_export(tmp_path / "c", None, "BLOCKS"), "generator", domain, "k")
    with pytest.raises(ConfigError, match="k=.*trained on domain 'gripper', but the domain here is 'blocks'"):
        check_export_domain(fake_export(tmp_path / "d", None, "gripper"), "generator", domain, "k")


def test_structure_ignores_parameter_names_and_order_of_parts():
    one = parse_domain(OTHER_BLOCKSWORLD)
    two = parse_domain(OTHER_BLOCKSWORLD.replace("?x", "?top").replace(
        "(and (holding ?top) (clear ?y))", "(and (clear ?y) (holding ?top))"))
    assert structure_difference(one, two) is None
    assert structure_difference(load_builtin("blocksworld"),
                                load_domain(builtin_path("blocksworld"))) is None
    assert structure_difference(one, load_builtin("gripper")).startswith("types differ")
