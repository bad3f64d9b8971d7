"""NL→PDDL dataset: descriptions paired with reference problems, and critic examples.

Output directory (written to a temp dir, then renamed — never half-written)::

    domain.pddl
    manifest.json               spec, seed, counts per split/style/scene, timings
    pairs/{train,val,test}.jsonl
    critic/{train,val,test}.jsonl

``pairs``: ``{"id", "problem_id", "group", "style": "explicit"|"abstract", "init_scene",
"goal_scene", "names", "description", "problem", "target"}`` (``problem`` is the reference PDDL
text, canonical: sorted atoms; ``target`` is what the generator is trained to write, the same
problem with the atoms in the order the description states them when ``target_order=description``:
an explicit description's clauses, :func:`~plansuite.nl2pddl.data.describe.described_order`; an abstract
one's scene read tower by tower, :func:`~plansuite.nl2pddl.data.scenes.scene_order`).
``critic``: ``{"id", "pair", "description", "problem", "label": "match"|"object"|"init"|"goal",
"detail"}``. Splits are by problem *group*: problems identical up to renaming of objects share
a group (a Weisfeiler-Lehman hash of the semantic graph), so no split sees another's problem
under different names. Abstract and random problems are split separately, so every split has both.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.nl2pddl.data import corrupt as corruptions
from plansuite.nl2pddl.data import scenes, scenes21
from plansuite.nl2pddl.data.describe import describe, described_order
from plansuite.nl2pddl.judging.critic import critic_input
from plansuite.nl2pddl.judging.equivalence import semantic_sections
from plansuite.nl2pddl.judging.graphs import graph_key, problem_graph
from plansuite.nl2pddl.judging.worlds import world_for
from plansuite.pddl.model import Atom, Domain, atom_text, problem_to_pddl

SCHEMA_VERSION = 1
SPLITS = ("train", "val", "test")
DOMAINS = ("blocksworld", "gripper", *scenes21.DOMAINS21)


@dataclass
class NL2PDDLSpec:
    name: str = "nl2pddl_blocksworld"
    domain: str = "blocksworld"  # built-in domain: blocksworld | gripper
    random_problems: int = 200  # explicit-only problems from random states
    min_objects: int = 3  # blocks (Blocksworld) or balls (Gripper) per random problem
    max_objects: int = 7
    abstract_sizes: list[int] = field(default_factory=lambda: [3, 4, 5, 6, 7, 8])
    rooms: list[int] = field(default_factory=lambda: [2, 3])  # Gripper only
    explicit_per_problem: int = 1  # explicit descriptions per problem
    abstract_per_problem: int = 1  # abstract descriptions per abstract problem
    heights_problems: int = 0  # Blocksworld: training-only abstract problems of towers with stated
                               # heights (scenes.blocksworld_heights), a counting curriculum
    counts_problems: int = 0  # Gripper: training-only abstract problems of rooms holding stated
                              # numbers of balls (scenes.gripper_counts), its counting curriculum
    curriculum_per_problem: int = 2  # abstract descriptions of each curriculum problem
    fractions: dict[str, float] = field(default_factory=lambda: {"train": 0.8, "val": 0.1, "test": 0.1})
    critic_positives: int = 1  # matching examples per pair (shuffled / equivalent rewrites)
    critic_negatives: int = 1  # corruptions per pair and mismatch kind
    target_order: str = "description"  # generator targets: description (clause order; an abstract
                                       # scene's reading order) | sorted (the reference)


@dataclass(frozen=True)
class Pair:
    id: str
    problem_id: str
    group: str
    style: str
    init_scene: str
    goal_scene: str
    description: str
    problem: str  # reference PDDL text
    target: str = ""  # the training target (same problem, atoms maybe reordered); "": problem

    @property
    def prompt(self) -> str:
        return generation_prompt(self.description)

    @property
    def completion(self) -> str:
        return f"{self.target or self.problem}{END}\n"


END = "END"  # closes a completion, so a causal LM learns where a problem stops


def generation_prompt(description: str) -> str:
    """Prompt of the local problem generator (the domain is fixed per dataset, so not included).

    >>> generation_prompt("Two blocks.")
    'DESCRIPTION: Two blocks.\\nPROBLEM:\\n'
    """
    return f"DESCRIPTION: {description}\nPROBLEM:\n"


@dataclass(frozen=True)
class CriticExample:
    id: str
    pair: str
    description: str
    problem: str
    label: str  # match | object | init | goal
    detail: str

    @property
    def text(self) -> str:
        return critic_input(self.description, self.problem)


# ---- building ---------------------------------------------------------------------------------
def scenarios(spec: NL2PDDLSpec, domain: Domain, seed: int) -> list[scenes.Scenario]:
    rng = random.Random(f"{seed}/scenes")
    for key, home in (("heights_problems", "blocksworld"), ("counts_problems", "gripper")):
        if getattr(spec, key) and spec.domain != home:
            raise ConfigError(f"dataset.{key}={getattr(spec, key)}: a {home} curriculum "
                              f"(dataset.domain={spec.domain!r}); set it to 0")
    if spec.domain == "blocksworld":
        out = scenes.blocksworld_abstract(domain, list(spec.abstract_sizes), rng)
        out += [scenes.blocksworld_random(domain, rng, spec.min_objects, spec.max_objects)
                for _ in range(spec.random_problems)]
        # last and from a stream of its own: the other problems, their indices and splits stay
        out += scenes.blocksworld_heights(domain, list(spec.abstract_sizes), spec.heights_problems,
                                          random.Random(f"{seed}/scenes/heights"))
    elif spec.domain == "gripper":
        out = scenes.gripper_abstract(domain, list(spec.abstract_sizes), list(spec.rooms), rng)
        out += [scenes.gripper_random(domain, rng, spec.min_objects, spec.max_objects, list(spec.rooms))
                for _ in range(spec.random_problems)]
        out += scenes.gripper_counts(domain, list(spec.abstract_sizes), list(spec.rooms), spec.counts_problems,
                                     random.Random(f"{seed}/scenes/counts"))
    elif spec.domain in scenes21.DOMAINS21:  # rooms: the places on the line (roads, corridors)
        out = scenes21.scenarios21(spec.domain, spec.random_problems, list(spec.abstract_sizes),
                                   list(spec.rooms), spec.min_objects, spec.max_objects, rng)
    else:
        raise ConfigError(f"dataset.domain={spec.domain!r}: NL→PDDL data exists for {', '.join(DOMAINS)}")
    return out


def group_of(scenario: scenes.Scenario, domain: Domain) -> str:
    """Same key for problems that are equal up to renaming (and, rarely, for others)."""
    p = scenario.problem
    if domain.level != "classical":  # no goal completion: init, goal, numbers and the metric
        graph = problem_graph(p.objects, {"init": p.init, "goal": p.goal_pos}, p.fluents)
        return graph_key(graph)[:16] + (f"|{p.metric}" if p.metric else "")
    return graph_key(problem_graph(p.objects, semantic_sections(p, domain, negatives=True)))[:16]


def assign_splits(groups: list[str], fractions: dict[str, float], rng: random.Random) -> dict[str, str]:
    """Shuffle the distinct groups and cut them by the split fractions.

    >>> out = assign_splits([f"g{i}" for i in range(10)], {"train": .8, "val": .1, "test": .1}, random.Random(0))
    >>> sorted(Counter(out.values()).items())
    [('test', 1), ('train', 8), ('val', 1)]
    """
    distinct = sorted(set(groups))
    rng.shuffle(distinct)
    total = sum(fractions.get(s, 0.0) for s in SPLITS)
    out, start = {}, 0
    for i, split in enumerate(SPLITS):
        share = fractions.get(split, 0.0) / total
        end = len(distinct) if i == len(SPLITS) - 1 else start + round(share * len(distinct))
        out.update((g, split) for g in distinct[start:end])
        start = end
    return out


def scene_key(scenario: scenes.Scenario) -> tuple[str, str, str]:
    """``(init scene, goal scene, size)`` of an abstract scenario, as :func:`assign_scene_splits`
    reads it (the size: its counts, e.g. ``{"n": 6, "steps": 3}``, as canonical JSON)."""
    return scenario.init_scene, scenario.goal_scene, json.dumps(scenario.params, sort_keys=True)


def assign_scene_splits(scenes_of: dict[str, tuple[str, str, str]], fractions: dict[str, float],
                        rng: random.Random) -> dict[str, str]:
    """Split abstract scenes (``group -> (init scene, goal scene, size)``) so that every held-out
    scene is a new combination of what training shows: a size of a scene pair training has other
    sizes of, and configurations training has at that size.

    Each family (scene pair) keeps at least half of its sizes in training; the others are
    candidates, taken one family at a time (families in random order) so the held-out scenes
    spread over the families: test first, then val, each its fraction of all the groups. A
    candidate whose mirror (goal and init scenes swapped, same size: a staircase of 6 to the
    table, and the table to one) is already held out stays in training. A plain shuffle gave val
    four of the six staircase scenes and training one (2 steps), so the 3-step staircase in test
    was a shape no training pair showed.

    >>> fams = {f"g{i}": ("on_table", "tower", str(i)) for i in range(6)}
    >>> fams |= {"s1": ("a", "b", "1"), "s2": ("a", "b", "2"), "m1": ("b", "a", "1")}
    >>> out = assign_scene_splits(fams, {"train": .6, "val": .2, "test": .2}, random.Random(0))
    >>> sorted(Counter(out.values()).items())
    [('test', 2), ('train', 5), ('val', 2)]
    """
    total = sum(fractions.get(s, 0.0) for s in SPLITS)
    quota = {s: round(fractions.get(s, 0.0) / total * len(scenes_of)) for s in ("test", "val")}
    by_family: dict[tuple[str, str], list[str]] = {}
    for group in sorted(scenes_of):
        by_family.setdefault(scenes_of[group][:2], []).append(group)
    order = sorted(by_family)
    rng.shuffle(order)
    candidates: list[list[str]] = []
    for family in order:
        members = by_family[family]
        rng.shuffle(members)
        candidates.append(members[:len(members) // 2])
    # Round robin over the families: the first candidate of each, then the second of each, ...
    queue = [c[i] for i in range(max(map(len, candidates), default=0)) for c in candidates if i < len(c)]
    out = dict.fromkeys(scenes_of, "train")
    held: set[tuple[str, str, str]] = set()
    for split in ("test", "val"):
        taken = 0
        while queue and taken < quota[split]:
            group = queue.pop(0)
            init, goal, size = scenes_of[group]
            if (goal, init, size) not in held:
                out[group], taken = split, taken + 1
                held.add(scenes_of[group])
    return out


@contextlib.contextmanager
def atomic_dir(out_dir: Path, overwrite: bool) -> Iterator[Path]:
    """A fresh temp dir beside ``out_dir`` that replaces ``out_dir`` only if the block succeeds."""
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise ConfigError(f"{out_dir}: output directory exists and is not empty "
                          "(choose another out_dir, or pass overwrite=true)")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    except OSError as exc:
        raise ConfigError(f"{out_dir}: cannot write here ({exc.strerror})") from exc
    try:
        yield tmp
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # no-op after a successful replace


def build_nl2pddl(spec: NL2PDDLSpec, domain: Domain, domain_text: str, out_dir: str | Path,
                  seed: int, overwrite: bool = False, config: dict | None = None, progress=print) -> dict:
    """Build the dataset directory atomically; return the manifest."""
    if world_for(domain) is None and domain.name not in scenes21.DOMAINS21:
        raise ConfigError(f"{domain.source}: NL→PDDL data needs the Blocksworld or Gripper signature "
                          f"(or a built-in PDDL 2.1 domain: {', '.join(scenes21.DOMAINS21)})")
    with atomic_dir(Path(out_dir), overwrite) as tmp:
        manifest = _build_into(tmp, spec, domain, domain_text, seed, progress)
        manifest["config"] = config or {}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _build_into(tmp: Path, spec: NL2PDDLSpec, domain: Domain, domain_text: str, seed: int,
                progress) -> dict:
    start = time.perf_counter()
    (tmp / "domain.pddl").write_text(domain_text)
    found = scenarios(spec, domain, seed)
    groups = [group_of(s, domain) for s in found]
    found, groups = _without_curriculum_twins(found, groups)
    split_of = assign_splits([g for g, s in zip(groups, found, strict=True) if not s.abstract],
                             spec.fractions, random.Random(f"{seed}/splits/random"))
    scenes_of = {g: scene_key(s) for g, s in zip(groups, found, strict=True)
                 if s.abstract and not s.training_only}
    split_of.update(assign_scene_splits(scenes_of, spec.fractions, random.Random(f"{seed}/splits/abstract")))
    split_of.update((g, "train") for g, s in zip(groups, found, strict=True) if s.training_only)
    timings = {"scenarios": round(time.perf_counter() - start, 3)}
    counts: dict[str, Counter] = {s: Counter() for s in SPLITS}
    pair_files = {s: _open(tmp / "pairs" / f"{s}.jsonl") for s in SPLITS}
    critic_files = {s: _open(tmp / "critic" / f"{s}.jsonl") for s in SPLITS}
    try:
        for index, (scenario, group) in enumerate(zip(found, groups, strict=True)):
            split = split_of[group]
            rng = random.Random(f"{seed}/problem/{index}")
            pid = f"p{index:05d}"
            styles = ["explicit"] * spec.explicit_per_problem
            styles += ["abstract"] * (0 if not scenario.abstract else spec.curriculum_per_problem
                                      if scenario.training_only else spec.abstract_per_problem)
            for k, style in enumerate(styles):
                description = _describe(domain)(scenario, style, rng)
                reference = problem_to_pddl(scenario.problem, domain)
                target = _target(spec, scenario, style, description, reference, domain)
                pair = Pair(f"{pid}-{style[0]}{k}", pid, group, style, scenario.init_scene,
                            scenario.goal_scene, description, reference, target)
                pair_files[split].write(_dumps({**asdict(pair), "names": scenario.names}))
                counts[split][f"pairs_{style}"] += 1
                for row in _critic_rows(pair, scenario, domain, spec, rng):
                    critic_files[split].write(_dumps(row))
                    counts[split][f"critic_{row['label']}"] += 1
            counts[split]["problems"] += 1
            if (index + 1) % 100 == 0 or index + 1 == len(found):
                progress(f"[nl2pddl-data] {index + 1}/{len(found)} problems")
    finally:
        for f in [*pair_files.values(), *critic_files.values()]:
            f.close()
    timings["pairs_and_critic"] = round(time.perf_counter() - start - timings["scenarios"], 3)
    return {"schema_version": SCHEMA_VERSION, "kind": "nl2pddl", "dataset": spec.name,
            "domain": domain.name, "seed": seed, "spec": asdict(spec),
            "counts": {s: dict(sorted(c.items())) for s, c in counts.items()},
            "groups": dict(Counter(split_of.values())), "timings_s": timings}


def _without_curriculum_twins(found: list[scenes.Scenario], groups: list[str]):
    """``found`` and ``groups`` without the training-only problems that equal another problem up
    to renaming (group keys are equal for such problems): that problem may be held out, and a
    twin in training would leak it. They come last, so every other index stays."""
    others = {g for g, s in zip(groups, found, strict=True) if not s.training_only}
    keep = [i for i, s in enumerate(found) if not s.training_only or groups[i] not in others]
    return [found[i] for i in keep], [groups[i] for i in keep]


def _target(spec: NL2PDDLSpec, scenario: scenes.Scenario, style: str, description: str,
            reference: str, domain: Domain) -> str:
    """The generator's target: ``reference`` with the atoms in the order the description states
    them, if asked for: an explicit description's clause order, an abstract one's reading order
    of its scene (:func:`~plansuite.nl2pddl.data.scenes.scene_order`)."""
    if spec.target_order not in ("description", "sorted"):
        raise ConfigError(f"dataset.target_order={spec.target_order!r}: choose description or sorted")
    if spec.target_order == "sorted" or domain.level != "classical":
        return reference
    order = (described_order(scenario, description) if style == "explicit"
             else scenes.scene_order(scenario))
    return reference if order is None else reorder_atoms(reference, order)


def reorder_atoms(text: str, order: dict[str, list[Atom]]) -> str:
    """A canonical problem text (:func:`~plansuite.pddl.model.problem_to_pddl`) with the atom
    lines of ``:init`` and ``:goal`` in the given order.

    >>> text = "  (:init\\n    (a)\\n    (b)\\n  )\\n  (:goal (and\\n    (c)\\n    (d)\\n  ))\\n"
    >>> out = reorder_atoms(text, {"init": [("b",), ("a",)], "goal": [("d",), ("c",)]})
    >>> [line.strip() for line in out.split("\\n")]
    ['(:init', '(b)', '(a)', ')', '(:goal (and', '(d)', '(c)', '))', '']
    """
    lines = text.split("\n")
    for part, opener in (("init", "  (:init"), ("goal", "  (:goal (and")):
        start = lines.index(opener) + 1
        end = start + len(order[part])
        assert sorted(lines[start:end]) == sorted(f"    {atom_text(a)}" for a in order[part])
        lines[start:end] = [f"    {atom_text(a)}" for a in order[part]]
    return "\n".join(lines)


def _describe(domain: Domain):
    return scenes21.describe21 if domain.level != "classical" else describe


def _critic_rows(pair: Pair, scenario: scenes.Scenario, domain: Domain, spec: NL2PDDLSpec,
                 rng: random.Random) -> list[dict]:
    rows = []
    for i in range(spec.critic_positives):
        variant = scenario.problem if domain.level != "classical" else \
            corruptions.equivalent_variant(scenario.problem, domain, rng)
        rows.append({"id": f"{pair.id}-m{i}", "pair": pair.id, "description": pair.description,
                     "problem": corruptions.shuffled_pddl(variant, domain, rng), "label": "match",
                     "detail": "reference" if variant == scenario.problem else "goal completed"})
    numeric = domain.level != "classical"
    for kind in scenes21.KINDS21 if numeric else corruptions.KINDS:
        for i in range(spec.critic_negatives):
            bad = (scenes21.corrupt21 if numeric else corruptions.corrupt)(scenario, domain, kind, rng)
            if bad is not None:
                rows.append({"id": f"{pair.id}-{kind[0]}{i}", "pair": pair.id,
                             "description": pair.description,
                             "problem": corruptions.shuffled_pddl(bad.problem, domain, rng),
                             "label": kind, "detail": bad.detail})
    return rows


def _open(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w")


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True) + "\n"


# ---- loading ----------------------------------------------------------------------------------
def load_nl2pddl_manifest(data_dir: str | Path) -> dict:
    path = Path(data_dir) / "manifest.json"
    if not path.is_file():
        raise ConfigError(f"{data_dir}: not an NL→PDDL dataset (no manifest.json; build one with "
                          "plansuite-nl2pddl task=data)")
    manifest = json.loads(path.read_text())
    if manifest.get("kind") != "nl2pddl":
        raise ConfigError(f"{path}: a '{manifest.get('dataset')}' dataset, not an NL→PDDL one")
    return manifest


def _rows(data_dir: str | Path, folder: str, split: str) -> list[dict]:
    if split not in SPLITS:
        raise ConfigError(f"split={split!r}: choose from {', '.join(SPLITS)}")
    load_nl2pddl_manifest(data_dir)
    path = Path(data_dir) / folder / f"{split}.jsonl"
    if not path.is_file():
        raise ConfigError(f"{path}: missing (dataset incomplete?)")
    return list(iter_jsonl(path))


def load_pairs(data_dir: str | Path, split: str) -> list[Pair]:
    fields = set(Pair.__dataclass_fields__)
    return [Pair(**{k: v for k, v in r.items() if k in fields}) for r in _rows(data_dir, "pairs", split)]


def load_critic_examples(data_dir: str | Path, split: str) -> list[CriticExample]:
    return [CriticExample(**r) for r in _rows(data_dir, "critic", split)]
