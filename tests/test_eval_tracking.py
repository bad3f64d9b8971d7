"""What W&B holds of an evaluation while it runs (and after a kill), the offline-run notice, and
the offline reader on config updates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripted import write_toy_instances

from plansuite.tracking import read_offline_run

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "HF_HUB_OFFLINE": "1",
       "OMP_NUM_THREADS": "1"}
FAST = ["generator=synthetic", "optimal.enabled=false", "val=false", "progress_every_s=1000"]


def eval_args(instances: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "plansuite.cli.eval", *FAST, f"instances={instances}",
            f"out_dir={out}", *extra]


def finished_run(run_dir: Path, wait_s: float = 30) -> dict:
    """The run once W&B's service has written its exit record: in this process ``finish()``
    may return before the service has flushed the run file."""
    deadline = time.monotonic() + wait_s
    while not (run := read_offline_run(run_dir))["finished"] and time.monotonic() < deadline:
        time.sleep(0.2)
    return run


def test_an_eval_killed_half_way_holds_its_progress_offline(tmp_path):
    instances = write_toy_instances(tmp_path / "toy", n=60, seed=4)
    out = tmp_path / "eval"
    # slow on purpose: a wandering generator (no greedy steps) tries k=25 full attempts each time
    proc = subprocess.Popen(eval_args(instances, out, "planner=generator", "planner.k=25",
                                      "synthetic.greedy=0", "engine=sequential"),
                            cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / "journal" / "shard-0.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.is_file() and len(journal.read_text().splitlines()) >= 5:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]  # still planning
    proc.terminate()  # SIGTERM, as kill, timeout and SLURM send
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    done = len(journal.read_text().splitlines())
    assert 5 <= done < 60
    (run_dir,) = (out / "wandb").glob("offline-run-*")
    run = read_offline_run(run_dir)
    assert run["job_type"] == "eval" and run["exit_code"] != 0  # closed as failed
    progress = [row for row in run["history"] if "progress/done" in row]
    assert progress and 1 <= progress[-1]["progress/done"] <= done
    assert progress[-1]["progress/total"] == 60
    assert {"progress/grr", "progress/btr"} <= set(progress[-1])


def test_a_finished_offline_eval_says_where_it_is_and_how_to_sync(tmp_path):
    instances = write_toy_instances(tmp_path / "toy", n=4, seed=4)
    out = tmp_path / "eval"
    done = subprocess.run(eval_args(instances, out, "planner=generator", "planner.k=2"), cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = (out / "wandb").glob("offline-run-*")
    assert f"wandb sync {run_dir}" in done.stdout
    header = next(line for line in done.stdout.splitlines() if line.startswith("planner "))
    assert "GRR [95% CI]" in header and "BTR [95% CI]" in header
    run = read_offline_run(run_dir)
    assert run["finished"] and [r["progress/done"] for r in run["history"]
                                if "progress/done" in r] == [1, 2, 3, 4]
    assert "domain:blocksworld-4ops" in run["tags"]  # the PDDL name, as training tags it


def test_the_offline_reader_keeps_config_updated_after_init(tmp_path, monkeypatch):
    """Lightning's WandbLogger logs the hyper-parameters with ``config.update`` after init."""
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(project="plansuite", dir=str(tmp_path), config={"seed": 3})
    run.config.update({"model": {"optim": {"lr": 0.002}}, "data_dir": "D"})
    run.finish()
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    config = finished_run(run_dir)["config"]
    assert config["seed"] == 3 and config["data_dir"] == "D"
    assert config["model"] == {"optim": {"lr": 0.002}}


def test_an_offline_training_run_says_how_to_sync_and_reads_back_its_whole_config(
        tiny_dataset, tmp_path, monkeypatch, capfd):
    from hydra import compose, initialize_config_dir

    from plansuite.cli import CONF_DIR
    from plansuite.cli.train import run as train

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "gen"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", [f"data_dir={tiny_dataset}", f"out_dir={out}", "logger=wandb",
                                "trainer.enable_progress_bar=false", "trainer.max_steps=2",
                                "model.val_greedy=2", "model.backbone.n_layer=1",
                                "model.backbone.n_embd=32", "model.backbone.n_head=2",
                                "model.optim.lr=0.0015"])
    import wandb

    train(cfg)
    assert wandb.run is not None
    wandb.finish()  # Lightning leaves the run open for the process's end
    (run_dir,) = (out / "wandb").glob("offline-run-*")
    printed = capfd.readouterr()
    assert f"wandb sync {run_dir}" in printed.out
    assert "anonymous setting" not in printed.err  # Lightning's anonymous=None is left out
    run = finished_run(run_dir)
    assert "domain:blocksworld-4ops" in run["tags"]  # the same name evaluation tags
    # the config's own keys (the dashboard shows model.optim.lr), not nested under "config"
    assert run["config"]["model"]["optim"]["lr"] == 0.0015 and "config" not in run["config"]
    assert run["config"]["data_dir"] == str(tiny_dataset)


def test_a_run_file_read_while_its_last_record_is_written_gives_the_records_before_it():
    """W&B's service may still be writing the last record when a run is read (``finished_run``
    polls): the torn record is left for the next read, not parsed."""
    import struct

    from plansuite.tracking import _FULL, _records

    def record(payload: bytes) -> bytes:
        return struct.pack("<IHB", 0, len(payload), _FULL) + payload

    data = b":W&B\x00\x00\x00" + record(b"first") + record(b"second")
    assert _records(data) == [b"first", b"second"]
    assert _records(data[:-3]) == [b"first"]  # "second" is half written
