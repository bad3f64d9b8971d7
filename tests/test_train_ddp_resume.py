"""The CLI as users run it (subprocesses): DDP on 2 CPU processes, and resume after SIGKILL."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates

CLI = str(Path(sys.executable).parent / "plansuite-train")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "TOKENIZERS_PARALLELISM": "false"}
COMMON = ["logger=none", "trainer.enable_progress_bar=false", "model.val_greedy=8"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "tiny"
    spec = DatasetSpec(train_states=40, val_states=6, test_instances=2, val_instances=2, chunk_size=20)
    build_dataset(spec, load_builtin("blocksworld"), domain_file("blocksworld").read_text(),
                  BlocksworldStates(3, 6), out, seed=2, workers=1, progress=lambda *_: None)
    return out


def n_transitions(data_dir) -> int:
    lines = (data_dir / "train" / "trajectories.jsonl").read_text().splitlines()
    return sum(len(json.loads(x)["actions"]) for x in lines)


def train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], env=ENV, capture_output=True, text=True, timeout=timeout)


def test_ddp_on_two_cpu_processes(data_dir, tmp_path):
    proc = train(f"data_dir={data_dir}", f"out_dir={tmp_path}", "trainer=ddp_sim", *COMMON,
                 "model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2",
                 "model.epochs=1", "model.batch_size=8")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    n_train = n_transitions(data_dir)
    # two ranks split each epoch: half the steps of one process, same batch size
    assert results["global_step"] == math.ceil(math.ceil(n_train / 2) / 8)
    assert (tmp_path / "export" / "plansuite.json").is_file()
    assert "val/next_state_exact" in results["metrics"]


@pytest.mark.slow
def test_resume_after_sigkill_mid_epoch(data_dir, tmp_path):
    args = [f"data_dir={data_dir}", f"out_dir={tmp_path}", *COMMON, "model.epochs=2",
            "model.batch_size=8", "checkpoint_every_n_steps=5", "model.backbone.n_embd=128"]
    last = tmp_path / "checkpoints" / "last.ckpt"
    proc = subprocess.Popen([CLI, *args], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while not last.is_file() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert last.is_file(), "no checkpoint before the kill"
    killed_at = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    steps_per_epoch = math.ceil(n_transitions(data_dir) / 8)
    assert 0 < killed_at < steps_per_epoch  # really mid-epoch
    assert not (tmp_path / "results.json").exists()
    # the same command without ckpt_path refuses to overwrite; with ckpt_path=last it resumes
    refused = train(*args, timeout=120)
    assert refused.returncode == 1 and "ckpt_path=last" in refused.stderr
    resumed = train(*args, "ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["global_step"] == 2 * steps_per_epoch
    assert results["resumed_from_step"] == killed_at
