"""NL→PDDL problem generation: data, generators, learned models, the repair loop, and judging.

One sub-package per idea, lowest first (a sub-package imports only from those above it in this
list, checked by ``tests/test_architecture.py``):

- :mod:`~plansuite.nl2pddl.judging` — is a candidate problem right? Equivalence with a reference
  (offline only), the online operational checks, and the critic's protocol and verdicts.
- :mod:`~plansuite.nl2pddl.data` — reference problems (scenes), their descriptions, critic
  corruptions, and the dataset on disk (``task=data``).
- :mod:`~plansuite.nl2pddl.decoding` — writing a problem from a description: the
  ``ProblemGenerator`` protocol and its OpenAI-compatible backend, decoding constrained by the
  domain file, and which objects a description mentions together.
- :mod:`~plansuite.nl2pddl.models` — the learned models (torch): tokenizer, DataModules,
  LightningModules (``plansuite-train model=problem_generator|critic``), the local generator and
  the critics backed by a model (classifier, the generator's likelihood, a chat model).
- :mod:`~plansuite.nl2pddl.loop` — the repair loop and its stop rules, the experiment over a
  split (``task=repair``), ``task=generate`` for any domain, per-round metrics and paired runs.

``models`` and ``loop`` share a layer and do not import each other; :mod:`.chat_server`
(``plansuite-serve``) sits above them all. Only the ``models`` modules import torch.
"""
