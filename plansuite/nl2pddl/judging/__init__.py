"""Is a candidate problem right? Judged without reading the description's wording.

- :mod:`.equivalence` — structural and semantic equivalence with a reference (offline only), on
  top of :mod:`.graphs` (isomorphism), :mod:`.worlds` (valid states and implied goal facts of
  Blocksworld and Gripper) and :mod:`.general_semantics` (any STRIPS domain, from its file).
- :mod:`.problem_checks` — the online operational checks (parse, domain, planner, VAL, critic)
  with located diagnostics.
- :mod:`.critic` — the ``Critic`` protocol, its verdicts, the critic's input and labels.
"""
