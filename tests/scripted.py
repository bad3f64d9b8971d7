"""Scripted generator and verifier (test doubles whose answers are a function of the request),
and a toy instance folder.

They pin loop semantics exactly (outcomes and call counts known in advance) and record every
batch they were sent, so tests can also see how the engine batched the work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

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


def write_toy_instances(out_dir: str | Path, n: int = 10, seed: int = 0, max_walk_len: int = 8,
                        blocks: tuple[int, int] = (3, 5)) -> Path:
    """A folder of ``n`` small blocksworld instances (a dataset's ``test/`` split), for tests
    and benchmarks that must not depend on ``../shared``; returns the folder."""
    from plansuite.data.builder import DatasetSpec, build_dataset
    from plansuite.domains import builtin_path, load_builtin
    from plansuite.domains.blocksworld import BlocksworldStates

    spec = DatasetSpec(name="toy", train_states=4, val_states=1, test_instances=n, val_instances=1,
                       test_max_walk_len=max_walk_len, chunk_size=4)
    out = Path(out_dir)
    build_dataset(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(),
                  BlocksworldStates(*blocks), out, seed=seed, workers=1, progress=lambda _: None)
    return out / "test"
