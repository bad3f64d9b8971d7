"""Sampling the generator on dataset transitions and judging each step with the simulator.

Used by the generator's validation (greedy: action validity, exact next state), by the verifier's
``onpolicy`` recipe (sampled steps labelled by the simulator) and by the training report.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from plansuite.data.load import TransitionRecord
from plansuite.pddl.codec import Step, parse_completion
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import TaskCache


@dataclass(frozen=True)
class JudgedStep:
    record: TransitionRecord  # where the step was proposed (its state and goal)
    text: str  # the generated completion
    step: Step | None  # decoded, or None when unparseable
    verdict: StepVerdict


def judge_texts(tasks: TaskCache, records: list[TransitionRecord], texts: list[str]) -> list[JudgedStep]:
    """Decode and judge one completion per record against the record's state."""
    out = []
    for record, text in zip(records, texts, strict=True):
        task = tasks.get(record.objects, [parse_atom_text(a) for a in record.state])
        parsed = parse_completion(text)
        verdict, _ = judge_step(task, task.encode(record.state), parsed)
        out.append(JudgedStep(record, text, parsed if isinstance(parsed, Step) else None, verdict))
    return out


def step_rates(judged: list[JudgedStep]) -> dict[str, float]:
    """Fractions of parseable steps, applicable actions and exactly right next states.

    >>> from plansuite.pddl.judge import StepVerdict as V
    >>> fake = [JudgedStep(None, "", None, v) for v in (V.OK, V.OK, V.BAD_NEXT_STATE, V.UNPARSEABLE)]
    >>> step_rates(fake)
    {'parseable': 0.75, 'action_valid': 0.75, 'next_state_exact': 0.5, 'n': 4}
    """
    counts = Counter(j.verdict for j in judged)
    n = max(1, len(judged))
    return {"parseable": 1 - counts[StepVerdict.UNPARSEABLE] / n,
            "action_valid": (counts[StepVerdict.OK] + counts[StepVerdict.BAD_NEXT_STATE]) / n,
            "next_state_exact": counts[StepVerdict.OK] / n, "n": len(judged)}


def sample_and_judge(policy, tasks: TaskCache, records: list[TransitionRecord], *,
                     samples_per_record: int = 1, temperature: float = 1.0, top_p: float = 0.99,
                     seed: int = 0) -> list[JudgedStep]:
    """``samples_per_record`` completions of each record's prompt, judged by the simulator."""
    prompts = [r.prompt for r in records for _ in range(samples_per_record)]
    repeated = [r for r in records for _ in range(samples_per_record)]
    gens = policy.generate(prompts, temperature=temperature, top_p=top_p, seed=seed)
    return judge_texts(tasks, repeated, [g.text for g in gens])


def pick_records(records: list[TransitionRecord], n: int | None, seed: int) -> list[TransitionRecord]:
    """A seeded subset of ``n`` records (all of them when ``n`` is None or too large)."""
    if n is None or n >= len(records):
        return list(records)
    return random.Random(seed).sample(records, n)
