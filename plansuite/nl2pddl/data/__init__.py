"""The NL→PDDL data (``task=data``): reference problems, their descriptions, critic examples.

- :mod:`.scenes` — reference problems of Blocksworld and Gripper (abstract scenes, random explicit
  problems); :mod:`.scenes21` — the PDDL 2.1 domains (``fuel-delivery``, ``timed-delivery``).
- :mod:`.describe` — natural-language descriptions of a reference problem.
- :mod:`.corrupt` — subtly wrong variants of a reference, the critic's training data.
- :mod:`.dataset` — the pairs and critic examples written to disk, and their readers.
"""
