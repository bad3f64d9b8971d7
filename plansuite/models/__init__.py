"""Learning: the GPT-2 generator and the sequence-classification verifiers.

One idea per file, read top to bottom:

- ``tokenizer``: the atom-level tokenizer (one token per line) and GPT-2 BPE; exact decoding.
- ``backbone``: tiny GPT-2 from a config, or pretrained weights from a directory / hub id.
- ``datamodules``: DataModules for transitions (generator) and labelled steps (verifier recipes:
  :mod:`plansuite.data.verifier_recipes`).
- ``sampling``: sample the generator on dataset states and judge each step with the simulator.
- ``generator`` / ``verifier``: the two LightningModules.
- ``verifier_metrics``: verifier metrics against simulator labels, threshold calibration.
- ``optim``, ``callbacks``: AdamW with linear warm-up; throughput and progress lines.
- ``export``: ``save_pretrained`` directories with ``plansuite.json``.
- ``inference``: :class:`~plansuite.models.inference.GeneratorPolicy` and
  :class:`~plansuite.models.inference.VerifierScorer`, the API the planning loops use.

The NL→PDDL models (their tokenizer, DataModules, LightningModules and the learned backend and
critic) live in :mod:`plansuite.nl2pddl`.

Training: :func:`plansuite.training.train` (``plansuite-train``, ``conf/train.yaml``).
"""
