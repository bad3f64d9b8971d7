"""NL→PDDL problem generation: data, grounded checks, repair loop, and offline equivalence.

- :mod:`~plansuite.nl2pddl.dataset` — description/problem pairs and critic examples (``task=data``);
  built from :mod:`.scenes` (reference problems) and :mod:`.describe` (wording).
- :mod:`~plansuite.nl2pddl.problem_checks` — online operational checks with located diagnostics.
- :mod:`~plansuite.nl2pddl.generators` — the ``ProblemGenerator`` protocol and an OpenAI-compatible
  HTTP backend; :mod:`.critic` — the ``Critic`` protocol; :mod:`.chat_critic` — a chat model as
  critic; :mod:`.corrupt` — critic training data.
- The learned models (torch): :mod:`.text_tokenizer` (a BPE trained on the dataset's text),
  :mod:`.text_datamodules` (pairs and critic examples), :mod:`.problem_generator_module` and
  :mod:`.critic_module` (the LightningModules, ``plansuite-train model=problem_generator|critic``)
  and :mod:`.learned` (the local backend and the learned critic over their exports).
- :mod:`~plansuite.nl2pddl.repair` — the loop and its stop rules; :mod:`.experiment` — a split,
  logged to JSONL with resume; :mod:`.generate` — any domain, a file of descriptions, no references
  (``task=generate``); :mod:`.round_metrics` — per-round rates and the gap table.
- :mod:`~plansuite.nl2pddl.equivalence` — structural and semantic equivalence (offline only), on
  top of :mod:`.graphs` (isomorphism) and :mod:`.worlds` (valid states, implied goal facts).

Only those learned-model modules import torch; the rest is pure Python.
"""
