"""Writing a problem from a description.

- :mod:`.generators` — the ``ProblemGenerator`` protocol of the repair loop, the feedback it
  receives, and an OpenAI-compatible HTTP backend (``backend=openai``).
- :mod:`.constrained` — decoding constrained by the domain file and the problem's own objects.
- :mod:`.mentions` — which objects a description mentions together (the decoder's stated
  relations and the likelihood critic's first look).
"""
