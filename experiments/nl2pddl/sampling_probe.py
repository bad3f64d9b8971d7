"""Is the right problem for a held-out abstract description anywhere in the generator's samples?

For every abstract test pair of a dataset: the greedy first attempt and ``--samples`` sampled first
attempts (the local backend as ``make nl2pddl-cpu`` runs it: constrained, the domain's problem name,
:meth:`~plansuite.nl2pddl.models.learned.LocalGenerator.sample`), each judged by semantic equivalence with
the reference. Per held-out scene it reports how many pairs greedy gets right, how many have a right
answer among greedy and the samples (what any selection over these candidates could reach), how
many a plurality vote over the samples' semantic classes gets right (self-consistency: the largest
class of mutually equivalent samples), how many the candidate the generator finds most likely gets
right (greedy and the samples ranked by their summed token log-probabilities, an approximate MAP
decode), and how many samples are right in all.

    python experiments/nl2pddl/sampling_probe.py GENERATOR_EXPORT DATA_DIR [--samples 16] [--out FILE.json]

Measured 2026-12-04 (experiments/nl2pddl/RESULTS.md, the pipeline's generators, 16 samples at 0.8):
the scenes greedy misses are missed by the samples too (Gripper's six-ball swap 0 of 128,
Blocksworld's two towers of four 0 of 128, three towers of three 5 of 128); the plurality vote
never beats greedy, and the most likely candidate is right exactly where greedy is.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from plansuite.errors import PlansuiteError
from plansuite.nl2pddl.data.dataset import load_pairs
from plansuite.nl2pddl.judging.equivalence import semantic
from plansuite.nl2pddl.models.learned import LocalGenerator
from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic
from plansuite.pddl.model import Domain, Problem
from plansuite.pddl.parse import parse_domain, parse_problem

T = TypeVar("T")


def plurality(items: list[T], same: Callable[[T, T], bool]) -> tuple[T, int] | None:
    """The first member of the largest class of ``items`` under ``same`` (an equivalence), and its size;
    ties go to the class met first. ``None`` for no items.

    >>> plurality([1, 4, 2, 6, 3], lambda a, b: a % 2 == b % 2)
    (4, 3)
    >>> plurality(["a", "b"], lambda x, y: x == y)
    ('a', 1)
    """
    classes: list[list[T]] = []
    for item in items:
        home = next((c for c in classes if same(c[0], item)), None)
        if home is None:
            classes.append([item])
        else:
            home.append(item)
    best = max(classes, key=len, default=None)  # max keeps the first of equal sizes
    return (best[0], len(best)) if best else None


def same_problem(a: tuple[str, Problem | None], b: tuple[str, Problem | None], domain: Domain) -> bool:
    """Two candidates, each ``(text, parsed problem or None)``: semantically equivalent when both
    parse, else the same text up to whitespace."""
    if a[1] is None or b[1] is None:
        return a[0].split() == b[0].split()
    return bool(semantic(a[1], b[1], domain).equivalent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export")
    ap.add_argument("data_dir")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--temperature", type=float, default=0.8)  # the repair loop's retry_temperature
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="write the per-pair and per-scene figures here as JSON")
    args = ap.parse_args()
    domain_text = (Path(args.data_dir) / "domain.pddl").read_text()
    domain = parse_domain(domain_text, str(Path(args.data_dir) / "domain.pddl"))
    generator = LocalGenerator(args.export, problem_name="domain")
    reader = LikelihoodCritic(args.export, threshold=0.5, problem_name="domain")  # only its log-probabilities
    pairs = [p for p in load_pairs(args.data_dir, "test") if p.style != "explicit"]

    def parsed(text: str) -> Problem | None:
        try:
            return parse_problem(text, domain, source="<sample>", check=False)
        except PlansuiteError:
            return None

    rows = []
    for i, pair in enumerate(pairs, 1):
        reference = parse_problem(pair.problem, domain, source=pair.id)
        candidates = generator.sample(pair.description, domain_text) + generator.sample(  # greedy first
            pair.description, domain_text, args.samples, args.temperature, args.seed)
        # (index, text, problem) per candidate: each parsed once, compared many times
        items = [(k, text, parsed(text)) for k, text in enumerate(candidates)]
        right = [p is not None and bool(semantic(reference, p, domain).equivalent) for _, _, p in items]
        vote = plurality(items[1:], lambda a, b: same_problem(a[1:], b[1:], domain))  # the samples, not greedy
        logprobs = [sum(lp) for lp, _ in reader.token_logprobs([pair.description] * len(candidates), candidates)]
        likeliest = max(range(len(candidates)), key=logprobs.__getitem__)
        rows.append({"id": pair.id, "scene": f"{pair.init_scene} -> {pair.goal_scene}", "greedy": right[0],
                     "samples_right": sum(right[1:]), "any_right": any(right),
                     "plurality": bool(vote and right[vote[0][0]]),
                     "plurality_size": vote[1] if vote else 0, "most_likely": right[likeliest]})
        print(f"[sampling-probe] {i}/{len(pairs)} {json.dumps(rows[-1])}", flush=True)
    scenes: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        scenes[row["scene"]].append(row)
    summary = {scene: {"pairs": len(rs), "greedy": sum(r["greedy"] for r in rs),
                       "any_right": sum(r["any_right"] for r in rs),
                       "plurality": sum(r["plurality"] for r in rs),
                       "most_likely": sum(r["most_likely"] for r in rs),
                       "samples_right": f"{sum(r['samples_right'] for r in rs)}/{len(rs) * args.samples}"}
               for scene, rs in scenes.items()}
    print("| scene | pairs | greedy | right among greedy + samples | plurality vote | most likely | right samples |")
    print("|---|---|---|---|---|---|---|")
    for scene, s in summary.items():
        print(f"| {scene} | {s['pairs']} | {s['greedy']} | {s['any_right']} | {s['plurality']} | {s['most_likely']} | "
              f"{s['samples_right']} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": vars(args), "scenes": summary, "pairs": rows}, indent=1))


if __name__ == "__main__":
    main()
