"""Sampling the generator on dataset transitions and judging each step with the simulator.

Used by the generator's validation and by the verifier's ``onpolicy`` recipe (sampled steps
labelled by the simulator); the judging, which needs no model, is :mod:`plansuite.data.judged`.
"""

from __future__ import annotations

from plansuite.data.judged import JudgedStep, judge_texts
from plansuite.data.load import TransitionRecord
from plansuite.pddl.simulator import TaskCache


def sample_and_judge(policy, tasks: TaskCache, records: list[TransitionRecord], *,
                     samples_per_record: int = 1, temperature: float = 1.0, top_p: float = 0.99,
                     seed: int = 0) -> list[JudgedStep]:
    """``samples_per_record`` completions of each record's prompt, judged by the simulator."""
    prompts = [r.prompt for r in records for _ in range(samples_per_record)]
    repeated = [r for r in records for _ in range(samples_per_record)]
    gens = policy.generate(prompts, temperature=temperature, top_p=top_p, seed=seed)
    return judge_texts(tasks, repeated, [g.text for g in gens])
