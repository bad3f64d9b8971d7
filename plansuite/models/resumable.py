"""Training data and randomness that a run killed mid-epoch resumes exactly.

A resumed run must see the batches the killed run would have seen next, in the same order, with
the same dropout masks. Three pieces make that so:

- :class:`EpochOrder`: the training order is a permutation that is a pure function of
  (seed, epoch), and under DDP this process's share of it. It is a ``DistributedSampler`` (one
  replica on a single device), so Lightning keeps it instead of injecting its own, and DDP runs
  keep the order Lightning's injected sampler gave them (the same permutation, seed + epoch). It
  forwards ``set_epoch`` to a dataset that has one, so that per-item randomness (object renaming,
  :class:`~plansuite.models.datamodules.RenamedPerEpoch`) can be a function of
  (seed, epoch, index) too.
- :class:`ResumableLoader`: a ``DataLoader`` with Lightning's resumable-loader protocol
  (``state_dict`` / ``load_state_dict``: ``lightning/pytorch/loops/fit_loop.py`` stores them in
  every checkpoint and loads them before it iterates again). Its state is the epoch and the
  batches of it already handed out; a resume skips that many batches of the epoch's order as
  indices, without loading them.
- :class:`ResumeState`: the global random states (torch, CUDA, Python, NumPy) in every
  checkpoint, restored on resume, so dropout draws continue as in the uninterrupted run
  (Lightning's own checkpoints do not hold them); it also puts the loader's position back where
  Lightning fails to, and keeps validation from drawing from training's random states.

Under DDP a checkpoint holds rank 0's states only: the data position is the same on every rank,
the random states are not, so a DDP run with dropout resumes with other dropout masks.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Sized
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, DistributedSampler


class EpochOrder(DistributedSampler):
    """This process's share of a permutation of the dataset that depends on (seed, epoch) only;
    ``start`` positions of it are skipped once, by the next iteration (a resume)."""

    def __init__(self, dataset: Sized, seed: int, num_replicas: int = 1, rank: int = 0):
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed,
                         drop_last=False)  # type: ignore[arg-type]
        self.start = 0

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        dataset_epoch = getattr(self.dataset, "set_epoch", None)
        if callable(dataset_epoch):  # per-item randomness follows the epoch too
            dataset_epoch(epoch)

    def __iter__(self) -> Iterator[int]:
        start, self.start = self.start, 0
        return itertools.islice(super().__iter__(), start, None)


class ResumableLoader(DataLoader):
    """A training loader whose position Lightning saves in mid-epoch checkpoints and restores.

    The state is ``{"epoch": e, "batches": n}``: n batches of epoch e were handed to the training
    loop (Lightning does not prefetch from loaders of known length, so when a checkpoint is saved
    after step k of an epoch, exactly k were). Loading it makes the next iteration of epoch e
    start at batch n; any other epoch starts at its beginning.
    """

    sampler: EpochOrder

    def __init__(self, dataset: Sized, sampler: EpochOrder, **kwargs: Any):
        super().__init__(dataset, sampler=sampler, **kwargs)  # type: ignore[arg-type]
        self.epoch, self.batches = 0, 0  # what the current (or last) iteration handed out
        self._resume: dict[str, int] | None = None

    def __iter__(self) -> Iterator[Any]:
        # A generator: this runs at the first batch, after Lightning's set_epoch for the epoch
        # (it creates the iterator before that, and on a resume also before the next epoch).
        epoch, skip = self.sampler.epoch, 0
        if self._resume is not None and self._resume["epoch"] == epoch:
            skip = self._resume["batches"]
        self._resume = None
        assert self.batch_size is not None  # batches of a fixed size: n batches = n * size indices
        self.sampler.start = skip * self.batch_size
        self.epoch, self.batches = epoch, skip
        # Each iteration draws its workers' base seed from ``generator``, by default the global
        # generator: a resumed run would draw once more there than the uninterrupted one, and
        # every dropout mask after would differ. A generator of (seed, epoch) draws the same seed.
        self.generator = torch.Generator().manual_seed(self.sampler.seed + epoch)
        for batch in super().__iter__():
            self.batches += 1
            yield batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batches": self.batches}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._resume = {"epoch": int(state["epoch"]), "batches": int(state["batches"])}
        self.sampler.set_epoch(self._resume["epoch"])  # a dataset copied to workers sees it too


def resumable_loader(dataset: Sized, batch_size: int, seed: int, collate_fn: Callable,
                     num_workers: int = 0, trainer: Any = None) -> ResumableLoader:
    """The shuffled training loader of a DataModule; ``trainer`` (when there is one) gives this
    process's rank and the number of processes."""
    replicas, rank = (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)
    return ResumableLoader(dataset, EpochOrder(dataset, seed, replicas, rank), batch_size=batch_size,
                           collate_fn=collate_fn, num_workers=num_workers)


def random_states() -> dict[str, Any]:
    """The global random states (torch, CUDA, Python, NumPy), as tensors and plain Python values:
    Lightning loads checkpoints with torch's default ``weights_only=True``, which refuses NumPy
    arrays."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, py_gauss = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": [version, list(internal), py_gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss]}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_random_states(state: dict[str, Any]) -> None:
    """Put back what :func:`random_states` returned."""
    torch.set_rng_state(state["torch"])
    version, internal, py_gauss = state["python"]
    random.setstate((version, tuple(internal), py_gauss))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    cuda = state.get("cuda")
    if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


class ResumeState(L.Callback):
    """What a Lightning checkpoint lacks for an exact resume, saved in each one and put back just
    before the first training batch of a resume (``on_train_start``):

    - the global random states, for dropout;
    - the training loader's position. Lightning saves it (the loader's ``state_dict``) but does
      not load it when ``configure_optimizers`` has read ``trainer.estimated_stepping_batches``,
      as ours does for the warmup schedule: that builds the loader before the checkpoint is
      restored and the restore then skips it (Lightning issue #20550, open in 2.6). Loading it
      again where Lightning did is harmless: the same state.

    Validation leaves the random states as it found them: it draws from them (each validation
    loader's worker seed, any sampling), and a resume from a checkpoint saved on an epoch's last
    batch skips that epoch's validation (Lightning restarts after it), so training's draws must
    not depend on it.
    """

    def __init__(self) -> None:
        self._trainer: Any = None
        self._pending: dict[str, Any] | None = None
        self._before_validation: dict[str, Any] | None = None

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self._trainer = trainer  # state_dict() is called without it

    def state_dict(self) -> dict[str, Any]:
        state = random_states()
        loader = self._trainer.train_dataloader if self._trainer is not None else None
        if isinstance(loader, ResumableLoader):
            state["data"] = loader.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._pending = state_dict

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        state, self._pending = self._pending, None
        if state is None:
            return
        set_random_states(state)
        loader = trainer.train_dataloader
        if "data" in state and isinstance(loader, ResumableLoader):
            loader.load_state_dict(state["data"])

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._before_validation = random_states()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._before_validation is not None:
            set_random_states(self._before_validation)
            self._before_validation = None


__all__ = ["EpochOrder", "ResumableLoader", "ResumeState", "random_states", "resumable_loader",
           "set_random_states"]
