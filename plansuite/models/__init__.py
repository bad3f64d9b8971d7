"""Learning: the GPT-2 generator and the sequence-classification verifiers.

One idea per file, read top to bottom:

- ``tokenizer``: the atom-level tokenizer (one token per line) and GPT-2 BPE; exact decoding.
- ``backbone``: tiny GPT-2 from a config, or pretrained weights from a directory / hub id.
- ``data``: DataModules for transitions (generator) and labelled steps (verifier recipes).
- ``sampling``: sample the generator on dataset states and judge each step with the simulator.
- ``generator`` / ``verifier``: the two LightningModules.
- ``metrics``: verifier metrics against simulator labels, threshold calibration.
- ``optim``, ``callbacks``: AdamW with linear warm-up; throughput and progress lines.
- ``export``: ``save_pretrained`` directories with ``plansuite.json``.
- ``inference``: :class:`~plansuite.models.inference.GeneratorPolicy` and
  :class:`~plansuite.models.inference.VerifierScorer`, the API the planning loops use.
- NL→PDDL: ``text_tokenizer`` (a BPE trained on the dataset's text), ``text_data`` (description /
  problem pairs, critic examples), ``problem_generator`` and ``critic`` (the LightningModules),
  ``nl2pddl`` (the local backend and the learned critic over their exports).

Training: :func:`plansuite.training.train` (``plansuite-train``, ``conf/train.yaml``).
"""
