"""A training run killed mid-epoch and resumed with ``ckpt_path=last`` reproduces the
uninterrupted run: the same loss at every logged step after the resume point, the same final
weights and validation metrics.

The kill is deterministic and in-process: a callback raises at step ``kill_at``, two steps after
the last ``checkpoints/last.ckpt`` (``checkpoint_every_n_steps``), in the middle of the second of
three epochs; the steps between the checkpoint and the kill are lost, as with a SIGKILL, and
Lightning writes nothing on the way out. The resume then has to find its place in the epoch's
data order, draw the same object renamings (generator: ``augment=rename``) and the same dropout
masks (``dropout=0.1``), and go on into the next epoch as the uninterrupted run did.
"""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger
from safetensors.torch import load_file

import plansuite.training as training
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.domains import builtin_path, domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.models.backbone import BackboneConfig
from plansuite.models.generator import GeneratorConfig
from plansuite.models.verifier import VerifierConfig
from plansuite.nl2pddl.models.critic_module import CriticConfig
from plansuite.nl2pddl.models.problem_generator_module import ProblemGeneratorConfig
from plansuite.training import CPU_TRAINER, TrainSpec, build

EVERY = 4  # checkpoint_every_n_steps
EPOCHS = 3
BATCH = 8


class Killed(Exception):
    """Stands for the SIGKILL: nothing after it runs."""


class KillAt(L.Callback):
    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            raise Killed(f"killed at step {self.step}")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, Path]:
    """A tiny transition dataset (generator, verifier) and a tiny NL -> PDDL one (the problem
    generator, the critic)."""
    from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, build_nl2pddl

    root = tmp_path_factory.mktemp("resume")
    spec = DatasetSpec(train_states=24, val_states=4, test_instances=2, val_instances=2, chunk_size=12)
    build_dataset(spec, load_builtin("blocksworld"), domain_file("blocksworld").read_text(),
                  BlocksworldStates(3, 5), root / "plans", seed=3, workers=1, progress=lambda *_: None)
    build_nl2pddl(NL2PDDLSpec(random_problems=12, max_objects=3, abstract_sizes=[3]),
                  load_builtin("blocksworld"), builtin_path("blocksworld").read_text(), root / "nl",
                  seed=3, progress=lambda _: None)
    return {"plans": root / "plans", "nl": root / "nl"}


TINY = {"n_layer": 1, "n_embd": 32, "n_head": 2, "dropout": 0.1}
MODELS = {
    "generator": lambda: GeneratorConfig(backbone=BackboneConfig(**TINY), augment="rename",
                                         batch_size=BATCH, epochs=EPOCHS, val_greedy=4),
    "verifier": lambda: VerifierConfig(backbone=BackboneConfig(**TINY), batch_size=2 * BATCH, epochs=EPOCHS),
    "problem_generator": lambda: ProblemGeneratorConfig(
        backbone=BackboneConfig(tokenizer="corpus", n_positions=512, **TINY), vocab_size=400,
        batch_size=2, epochs=EPOCHS, val_greedy=2, max_new_tokens=8),
    "critic": lambda: CriticConfig(backbone=BackboneConfig(tokenizer="corpus", n_positions=512, **TINY),
                                   vocab_size=400, batch_size=BATCH, epochs=EPOCHS),
}


def spec_of(kind: str, data_dir: Path, out_dir: Path, ckpt_path: str | None = None,
            every: int = EVERY) -> TrainSpec:
    trainer = {**CPU_TRAINER, "log_every_n_steps": 1, "enable_progress_bar": False}
    return TrainSpec(data_dir, out_dir, MODELS[kind](), trainer, seed=7, ckpt_path=ckpt_path,
                     checkpoint_every_n_steps=every,
                     logger=lambda *_: CSVLogger(out_dir, name="logs"))


def step_losses(out_dir: Path, version: int) -> dict[int, float]:
    """step -> train/loss of one run, from the CSV logger's file."""
    with open(out_dir / "logs" / f"version_{version}" / "metrics.csv") as f:
        return {int(r["step"]): float(r["train/loss"]) for r in csv.DictReader(f) if r["train/loss"]}


def weights(out_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(out_dir / "export" / "model.safetensors")


@pytest.mark.parametrize(("kind", "saved_at"), [*((k, "mid-epoch") for k in MODELS),
                                               ("generator", "epoch-end")])
def test_a_run_killed_mid_epoch_resumes_exactly(kind, saved_at, datasets, tmp_path, monkeypatch):
    """``epoch-end``: the checkpoint is saved on the first epoch's last batch, before its
    validation, which the resume then skips (Lightning restarts after it): training must not
    depend on what validation draws."""
    data_dir = datasets["nl" if kind in ("problem_generator", "critic") else "plans"]
    straight = training.train(spec_of(kind, data_dir, tmp_path / "straight"))
    per_epoch = straight["global_step"] // EPOCHS
    assert straight["global_step"] == EPOCHS * per_epoch and per_epoch > EVERY + 2
    if saved_at == "mid-epoch":  # the last checkpoint before the kill: mid-way through epoch 2
        every = EVERY
        saved = next(s for s in range(every, EPOCHS * per_epoch, every) if s > per_epoch + 1)
        assert saved % per_epoch and math.ceil((saved + 2) / per_epoch) == math.ceil(saved / per_epoch)
    else:
        every = saved = per_epoch
    kill_at = saved + 2

    make_trainer = training.make_trainer

    def killing_trainer(*args, **kwargs):
        trainer, *rest = make_trainer(*args, **kwargs)
        trainer.callbacks.append(KillAt(kill_at))
        return (trainer, *rest)

    out = tmp_path / "killed"
    with monkeypatch.context() as m:
        m.setattr(training, "make_trainer", killing_trainer)
        with pytest.raises(Killed):
            training.train(spec_of(kind, data_dir, out, every=every))
    last = torch.load(out / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert last["global_step"] == saved and not (out / "results.json").exists()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = training.train(spec_of(kind, data_dir, out, ckpt_path="last", every=every))
    assert resumed["resumed_from_step"] == saved
    assert resumed["global_step"] == straight["global_step"]

    expected = {s: v for s, v in step_losses(tmp_path / "straight", 0).items() if s >= saved}
    got = step_losses(out, 1)  # the resumed run's log: version_1 next to the killed run's
    assert sorted(got) == sorted(expected) and len(got) == straight["global_step"] - saved
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert resumed["metrics"] == pytest.approx(straight["metrics"], rel=1e-4, abs=1e-6)
    a, b = weights(tmp_path / "straight"), weights(out)
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6) for k in a)
    assert not [w for w in caught if "not resumable" in str(w.message)]  # Lightning agrees


def test_the_order_is_a_function_of_seed_and_epoch_and_renamings_of_the_item_too(datasets, tmp_path):
    """Two loaders made apart (as a killed and a resumed process make them) agree batch for
    batch; another epoch or seed gives another order; a loader restored from a position yields
    the rest of that epoch."""
    spec = TrainSpec(datasets["plans"], tmp_path, MODELS["generator"](), seed=7)
    dm = build(spec, load_builtin("blocksworld")).datamodule

    def epoch_batches(epoch: int, seed: int = 7, resume: dict | None = None) -> list[list]:
        dm.seed = seed
        loader = dm.train_dataloader()
        if resume:
            loader.load_state_dict(resume)
        loader.sampler.set_epoch(epoch)  # what Lightning does at each epoch's start
        return [b["input_ids"].tolist() for b in loader]

    first, again = epoch_batches(1), epoch_batches(1)
    assert first == again
    assert first != epoch_batches(2) and first != epoch_batches(1, seed=8)
    assert epoch_batches(1, resume={"epoch": 1, "batches": 3}) == first[3:]
    assert epoch_batches(2, resume={"epoch": 1, "batches": 3}) == epoch_batches(2)  # once only
    renamed = dm.train
    renamed.set_epoch(1)
    item = renamed[5]
    assert renamed[5] == item  # a pure function of (seed, epoch, index), not of how often drawn
    others = []
    for epoch in range(2, 8):
        renamed.set_epoch(epoch)
        others.append(renamed[5])
    assert any(other != item for other in others)  # and renamed afresh in other epochs
    json.dumps(dm.train_dataloader().state_dict())  # plain values in the checkpoint


@pytest.mark.slow
def test_a_cli_run_killed_with_sigkill_resumes_exactly(datasets, tmp_path):
    """The same with a real SIGKILL of ``plansuite-train`` at whatever step it has reached once
    its first checkpoint exists, and the resume in a new process."""
    cli = str(Path(sys.executable).parent / "plansuite-train")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    common = [f"data_dir={datasets['plans']}", "logger=csv", "trainer.log_every_n_steps=1",
              "trainer.enable_progress_bar=false", "seed=7", "checkpoint_every_n_steps=5",
              "model.epochs=2", f"model.batch_size={BATCH}", "model.val_greedy=4",
              "model.augment=rename", *(f"model.backbone.{k}={v}" for k, v in TINY.items())]

    def cli_run(out: Path, *extra: str) -> dict:
        proc = subprocess.run([cli, f"out_dir={out}", *common, *extra], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((out / "results.json").read_text())

    straight = cli_run(tmp_path / "straight")
    out = tmp_path / "killed"
    last = out / "checkpoints" / "last.ckpt"
    proc = subprocess.Popen([cli, f"out_dir={out}", *common], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not last.is_file() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    assert 0 < saved < straight["global_step"] // 2  # mid-way through the first epoch
    resumed = cli_run(out, "ckpt_path=last")
    assert resumed["resumed_from_step"] == saved

    def logged(run: Path) -> dict[int, float]:
        versions = sorted((run / "logs").glob("version_*"), key=lambda p: int(p.name.split("_")[1]))
        return step_losses(run, int(versions[-1].name.split("_")[1]))

    expected = {s: v for s, v in logged(tmp_path / "straight").items() if s >= saved}
    assert logged(out) == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert resumed["metrics"] == pytest.approx(straight["metrics"], rel=1e-4, abs=1e-6)
