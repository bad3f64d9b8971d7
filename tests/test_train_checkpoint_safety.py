"""A checkpoint given as ``ckpt_path`` is read as weights and plain values only: a planted file
whose unpickling would run code is refused in one line and its code never runs."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR
from plansuite.cli.train import run

TINY = ["logger=none", "trainer.enable_progress_bar=false", "model.backbone.n_layer=1",
        "model.backbone.n_embd=32", "model.backbone.n_head=2", "trainer.max_steps=2"]


class Planted:
    """Unpickling calls ``open(marker, "w")``: the file appears if the checkpoint's code ran."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def config(data_dir, out_dir, ckpt_path):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", [f"data_dir={data_dir}", f"out_dir={out_dir}",
                                 f"ckpt_path={ckpt_path}", *TINY])


@pytest.mark.parametrize("force_unsafe_default", [False, True])
def test_a_checkpoint_that_would_run_code_is_refused_in_one_line(tiny_dataset, tmp_path, capsys,
                                                                 monkeypatch, force_unsafe_default):
    if force_unsafe_default:  # torch's own default flipped by the environment: still refused
        monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker = tmp_path / "ran"
    planted = tmp_path / "planted.ckpt"
    torch.save({"global_step": 7, "state_dict": {}, "extra": Planted(str(marker))}, planted)
    with pytest.raises(SystemExit) as ended:
        run(config(tiny_dataset, tmp_path / "run", planted))
    err = capsys.readouterr().err.strip().splitlines()
    assert ended.value.code == 1 and len(err) == 1, err
    assert err[0].startswith("error: ") and str(planted) in err[0] and "refused" in err[0]
    assert not marker.exists()


def test_lightning_resumes_and_validates_with_weights_only(tiny_dataset, tmp_path, monkeypatch):
    """Lightning's own loads of the checkpoint are told ``weights_only=True`` too (its default,
    ``None``, leaves the choice to an environment variable)."""
    seen = []

    class Stop(Exception):
        pass

    def fit(self, *args, **kwargs):
        seen.append(kwargs)
        raise Stop

    plain = tmp_path / "plain.ckpt"
    torch.save({"global_step": 3}, plain)
    monkeypatch.setattr(L.Trainer, "fit", fit)
    with pytest.raises(Stop):
        run(config(tiny_dataset, tmp_path / "run", plain))
    assert seen[0]["ckpt_path"] == str(plain) and seen[0]["weights_only"] is True
