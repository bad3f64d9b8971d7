"""Training throughput: real (non-padding) tokens per second of training, validation excluded."""

from __future__ import annotations

import time

import lightning as L


class TokensPerSecond(L.Callback):
    """Logs ``train/tokens_per_s`` (all ranks together) and keeps run totals for the report."""

    def __init__(self, log_every_n_steps: int = 20):
        self.log_every_n_steps = log_every_n_steps
        self.tokens = 0  # this rank, whole run
        self.seconds = 0.0
        self._window_tokens, self._window_seconds = 0, 0.0
        self._last: float | None = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._last = time.perf_counter()

    def on_validation_end(self, trainer, pl_module) -> None:
        self._last = time.perf_counter()  # validation time is not training time

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        now = time.perf_counter()
        elapsed, self._last = now - (self._last or now), now
        n = int(batch["attention_mask"].sum())
        self.tokens += n
        self.seconds += elapsed
        self._window_tokens += n
        self._window_seconds += elapsed
        if trainer.global_step % self.log_every_n_steps == 0 and self._window_seconds > 0:
            rate = self._window_tokens / self._window_seconds * trainer.world_size
            pl_module.log("train/tokens_per_s", rate, on_step=True, on_epoch=False, prog_bar=True)
            self._window_tokens, self._window_seconds = 0, 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0
