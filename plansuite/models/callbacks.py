"""Training throughput: real (non-padding) tokens per second of training, validation excluded."""

from __future__ import annotations

import time

import lightning as L

from plansuite.progress import eta, format_eta


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


class ProgressLines(L.Callback):
    """Plain progress lines for logs (when stdout is not a terminal): every ``every_n_steps``
    training steps, with the time left at this process's mean rate (a resumed run counts from
    where it resumed), and after every validation, on the main process only."""

    def __init__(self, every_n_steps: int = 100):
        self.every_n_steps = every_n_steps
        self.started: tuple[int, float] = (0, 0.0)  # (global step, time) of this process's first step

    @staticmethod
    def _fmt(metrics: dict, prefix: str) -> str:
        return " ".join(f"{k}={float(v):.4g}" for k, v in sorted(metrics.items())
                        if k.startswith(prefix) and not k.endswith(("/n", "/n_invalid")))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if not self.started[1]:
            self.started = (trainer.global_step, time.perf_counter())

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.is_global_zero and trainer.global_step % self.every_n_steps == 0:
            total = trainer.estimated_stepping_batches
            first, since = self.started  # set by on_train_batch_start
            left = eta(trainer.global_step - first, total - first, time.perf_counter() - since)
            print(f"[train] epoch {trainer.current_epoch + 1}/{trainer.max_epochs} step "
                  f"{trainer.global_step}/{total} "
                  f"{self._fmt(trainer.callback_metrics, 'train/')} ETA {format_eta(left)}", flush=True)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.is_global_zero and not trainer.sanity_checking:
            what = "final validation" if trainer.state.fn == "validate" else "validation"
            print(f"[train] {what} at step {trainer.global_step}: "
                  f"{self._fmt(trainer.callback_metrics, 'val/')}", flush=True)


class LastValidation(L.Callback):
    """The global step of the latest validation run (sanity checks do not count), kept in the
    checkpoints so a resumed run knows it too: whether the finished weights were ever validated
    (:func:`plansuite.training.final_if_better`)."""

    def __init__(self):
        self.step = -1

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.step = trainer.global_step

    def state_dict(self) -> dict:
        return {"step": self.step}

    def load_state_dict(self, state_dict: dict) -> None:
        self.step = int(state_dict.get("step", -1))
