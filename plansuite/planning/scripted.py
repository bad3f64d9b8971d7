"""Scripted generator and verifier: test doubles whose answers are a function of the request.

They pin loop semantics exactly (outcomes and call counts known in advance) and record every
batch they were sent, so tests can also see how the engine batched the work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from plansuite.planning.protocols import GenRequest, Proposal, VerifyRequest


class ScriptedGenerator:
    """``script(request) -> text`` (or a Proposal); every call's batch is kept in ``batches``."""

    def __init__(self, script: Callable[[GenRequest], str | Proposal]):
        self.script = script
        self.batches: list[list[GenRequest]] = []

    @classmethod
    def from_table(cls, table: Mapping[str, Sequence[Sequence[str]]],
                   default: str = "<no script>") -> ScriptedGenerator:
        """``table[instance][attempt][step]`` is the text; missing entries give ``default``."""

        def script(r: GenRequest) -> str:
            attempts = table.get(r.instance, ())
            attempt, step = r.key[0], r.key[1]
            if attempt < len(attempts) and step < len(attempts[attempt]):
                return attempts[attempt][step]
            return default

        return cls(script)

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            answer = self.script(r)
            out.append(answer if isinstance(answer, Proposal) else Proposal(answer, len(answer.split())))
        return out

    @property
    def calls(self) -> int:
        return sum(map(len, self.batches))


class ScriptedVerifier:
    """``script(request) -> P(valid)``, with a threshold; batches are kept like the generator's."""

    def __init__(self, script: Callable[[VerifyRequest], float], threshold: float = 0.5):
        self.script, self.threshold = script, threshold
        self.input_kind = "state_action"
        self.batches: list[list[VerifyRequest]] = []

    def score(self, requests: Sequence[VerifyRequest]) -> list[float]:
        self.batches.append(list(requests))
        return [float(self.script(r)) for r in requests]

    @property
    def calls(self) -> int:
        return sum(map(len, self.batches))
