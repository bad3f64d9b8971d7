"""NL→PDDL problem generation: data, grounded checks, repair loop, and offline equivalence.

- :mod:`~plansuite.nl2pddl.dataset` — description/problem pairs and critic examples (``task=data``);
  built from :mod:`.scenes` (reference problems) and :mod:`.describe` (wording).
- :mod:`~plansuite.nl2pddl.checks` — online operational checks with located diagnostics.
- :mod:`~plansuite.nl2pddl.generators` — the ``ProblemGenerator`` protocol and an OpenAI-compatible
  HTTP backend; :mod:`.critic` — the ``Critic`` protocol; :mod:`.corrupt` — critic training data.
  The learned implementations (a local problem generator and the critic, trained with
  ``plansuite-train model=problem_generator|critic``) load torch models, so they live in
  :mod:`plansuite.models.nl2pddl`.
- :mod:`~plansuite.nl2pddl.repair` — the loop and its stop rules; :mod:`.experiment` — a split,
  logged to JSONL with resume; :mod:`.metrics` — per-round rates and the gap table.
- :mod:`~plansuite.nl2pddl.equivalence` — structural and semantic equivalence (offline only), on
  top of :mod:`.graphs` (isomorphism) and :mod:`.worlds` (valid states, implied goal facts).

Pure Python: nothing here imports torch.
"""
