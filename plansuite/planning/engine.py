"""The batched lockstep engine: many instances' loops advance together, one model call per round.

Each live instance runs its loop coroutine (:mod:`.loops`) up to its next :class:`~.loops.Need`.
A round gathers every live instance waiting on the generator into one ``propose`` call (the
model's batched, KV-cached ``generate``), hands each instance its answer, then does the same for
the verifier. An instance that finishes frees its slot for the next instance; a rejected attempt
simply continues its coroutine with the next attempt's first request. Which requests are made
does not depend on the batching, so outcomes and call counts are the same at every batch size,
given a generator whose sampling is seeded per request: :func:`run_sequential` (batch size 1,
one instance and one request at a time) is the plain reading the tests hold the engine to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from plansuite.planning.episode import EpisodeResult, InstanceContext
from plansuite.planning.loops import GENERATE, VERIFY, Need, PlannerSpec, loop_def
from plansuite.planning.protocols import Generator, Verifier, propose_batch, score_batch


class Episode:
    """One instance's loop coroutine plus its call counters."""

    def __init__(self, ctx: InstanceContext, spec: PlannerSpec):
        self.ctx = ctx
        self._loop = loop_def(spec.loop).run(ctx, spec)
        self.need: Need | None = None
        self.result: EpisodeResult | None = None
        self.generator_calls = self.verifier_calls = self.tokens = 0
        self.started = time.perf_counter()
        self.elapsed_s = 0.0

    def start(self) -> bool:
        return self._resume(None)

    def answer(self, answers: list) -> bool:
        """Deliver the answers to the current need; False once the loop has returned."""
        assert self.need is not None and len(answers) == len(self.need.requests)
        if self.need.kind == GENERATE:
            self.generator_calls += len(answers)
            self.tokens += sum(p.n_tokens for p in answers)
        else:
            self.verifier_calls += len(answers)
        return self._resume(answers)

    def _resume(self, answers: list | None) -> bool:
        try:
            need = self._loop.send(answers)
            while not need.requests:  # e.g. post-hoc scoring of an empty plan
                need = self._loop.send([])
        except StopIteration as stop:
            result: EpisodeResult = stop.value
            result.generator_calls, result.verifier_calls = self.generator_calls, self.verifier_calls
            result.tokens = self.tokens
            self.result, self.need = result, None
            self.elapsed_s = time.perf_counter() - self.started
            return False
        self.need = need
        return True


def run_batched(contexts: Iterable[InstanceContext], spec: PlannerSpec, generator: Generator,
                verifier: Verifier | None,
                on_done: Callable[[InstanceContext, EpisodeResult, float], None],
                batch_size: int = 64) -> None:
    """Plan every instance; ``on_done(ctx, result, elapsed_s)`` runs as each one finishes.

    At most ``batch_size`` instances are live, so a generator call holds at most ``batch_size``
    prompts; verifier requests are sent in chunks of ``batch_size`` too.
    """
    pending: Iterator[InstanceContext] = iter(contexts)
    live: list[Episode] = []

    def refill() -> None:
        while len(live) < batch_size:
            ctx = next(pending, None)
            if ctx is None:
                return
            episode = Episode(ctx, spec)
            if episode.start():
                live.append(episode)
            else:
                on_done(episode.ctx, episode.result, episode.elapsed_s)

    refill()
    while live:
        for kind in (GENERATE, VERIFY):
            waiting = [e for e in live if e.need.kind == kind]
            if not waiting:
                continue
            requests = [r for e in waiting for r in e.need.requests]
            answers = []
            for start in range(0, len(requests), batch_size):
                chunk = requests[start:start + batch_size]
                answers += (propose_batch(generator, chunk) if kind == GENERATE
                            else score_batch(verifier, chunk))
            offset = 0
            for episode in waiting:
                n = len(episode.need.requests)
                if not episode.answer(answers[offset:offset + n]):
                    live.remove(episode)
                    on_done(episode.ctx, episode.result, episode.elapsed_s)
                offset += n
            refill()


def run_sequential(contexts: Iterable[InstanceContext], spec: PlannerSpec, generator: Generator,
                   verifier: Verifier | None,
                   on_done: Callable[[InstanceContext, EpisodeResult, float], None]) -> None:
    """One instance at a time, one request per model call: the same loops, unbatched."""
    run_batched(contexts, spec, generator, verifier, on_done, batch_size=1)


def plan_instance(ctx: InstanceContext, spec: PlannerSpec, generator: Generator,
                  verifier: Verifier | None) -> EpisodeResult:
    """Plan one instance sequentially (tests compare the batched engine with this)."""
    done: list[EpisodeResult] = []
    run_sequential([ctx], spec, generator, verifier, lambda _c, result, _t: done.append(result))
    return done[0]
