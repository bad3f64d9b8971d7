"""Skill discovery (AdaPlanner's skill filter, as expert-iteration rounds over the generator).

- ``rounds``: the round loop (rollout, verified batch, candidate, filter, test) and its records.
- ``instances``: training-distribution rollout instances; held-out folders are refused.
- ``finetune``: generators as exports, candidates finetuned with :func:`plansuite.training.train`.

The model-free parts, the archive of verified plans and the keep-only-if-validation-GRR-rises
rule, live in :mod:`plansuite.skills.archive`. Command line: ``plansuite-skills``
(:mod:`plansuite.cli.skills`, ``conf/skills.yaml``).
"""
