"""Progress with an ETA: periodic lines without a terminal, a tqdm bar on one."""

from __future__ import annotations

import io

from plansuite.planning.evaluate import Progress
from plansuite.progress import ProgressReport


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_without_a_terminal_lines_carry_counts_stats_rate_and_eta():
    lines: list[str] = []
    report = ProgressReport("[job]", 3, every_s=0, log=lines.append, stream=io.StringIO())
    for n in range(3):
        report.update(1, success=str(n))
    assert len(lines) == 3 and lines[0].startswith("[job]: 1/3 | success 0 | ")
    assert "ETA " in lines[0] and lines[-1].endswith("ETA 0s")


def test_lines_are_throttled_but_the_last_always_comes():
    lines: list[str] = []
    report = ProgressReport("[job]", 50, every_s=3600, log=lines.append, stream=io.StringIO())
    for _ in range(50):
        report.update()
    assert len(lines) == 1 and lines[0].startswith("[job]: 50/50")


def test_on_a_terminal_a_bar_is_drawn_instead_of_lines():
    lines: list[str] = []
    screen = Terminal()
    report = ProgressReport("[job]", 4, every_s=0, log=lines.append, stream=screen, unit="instance")
    for _ in range(4):
        report.update(1, btr="0.25")
    assert lines == [] and "4/4" in screen.getvalue() and "btr=0.25" in screen.getvalue()


def test_eval_progress_lines_show_btr_and_eta():
    lines: list[str] = []
    progress = Progress("gv shard 0", 2, every_s=0, log=lines.append)
    progress.update({"attempts": 3, "outcome": "success"})
    progress.update({"attempts": 5, "outcome": "bad_action"})
    assert lines[-1].startswith("[eval] gv shard 0: 2/2 | success 1 (0.50) | btr 0.50 | ")
    assert "ETA 0s" in lines[-1]


def test_dataset_progress_lines_carry_an_eta(tmp_path):
    from plansuite.data.builder import DatasetSpec, build_dataset
    from plansuite.domains import builtin_path, load_builtin
    from plansuite.domains.blocksworld import BlocksworldStates

    lines: list[str] = []
    spec = DatasetSpec(train_states=8, val_states=2, test_instances=2, val_instances=2, chunk_size=2)
    build_dataset(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(),
                  BlocksworldStates(3, 4), tmp_path / "d", seed=0, workers=1, progress=lines.append)
    train = [line for line in lines if line.startswith("[data] train:")]
    assert train and train[-1].startswith("[data] train: 4/4 chunks") and train[-1].endswith("ETA 0s")


def test_the_warnings_every_training_run_printed_are_filtered():
    import warnings

    from plansuite.cli import quiet_known_warnings  # called when plansuite.cli is imported

    with warnings.catch_warnings(record=True) as seen:  # pytest resets filters around each test
        quiet_known_warnings()
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...", UserWarning,
                      stacklevel=1)
        warnings.warn("`ModelCheckpoint(monitor='val/loss')` could not find the monitored key in "
                      "the returned metrics: ['train/loss']", UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["something else"]


def test_training_progress_lines_carry_the_time_left_from_where_this_process_started(capsys, monkeypatch):
    """A run resumed at step 400 of 1 000 that took 10 s for its first 100 steps has 50 s left."""
    from types import SimpleNamespace

    from plansuite.models import callbacks

    clock = iter([100.0, 110.0])
    monkeypatch.setattr(callbacks.time, "perf_counter", lambda: next(clock))
    trainer = SimpleNamespace(global_step=400, estimated_stepping_batches=1000, current_epoch=0,
                              max_epochs=3, callback_metrics={"train/loss": 0.5}, is_global_zero=True)
    lines = callbacks.ProgressLines(every_n_steps=100)
    lines.on_train_batch_start(trainer, None, None, 0)
    trainer.global_step = 500
    lines.on_train_batch_end(trainer, None, None, None, 0)
    assert capsys.readouterr().out.strip() == "[train] epoch 1/3 step 500/1000 train/loss=0.5 ETA 50s"
