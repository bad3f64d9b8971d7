"""Adding a model kind is one module plus one config file (:mod:`plansuite.models.kinds`):
``tests/toy_kind.py`` and a ``model/toy.yaml`` written here, trained by ``plansuite-train``'s
own path for a few steps."""

from __future__ import annotations

import json

from hydra import compose, initialize_config_dir
from test_train_cli import QUIET, data_dir  # noqa: F401  (the fixture)

from plansuite.cli import CONF_DIR
from plansuite.cli.train import run, train_spec
from plansuite.training import kind_def

TOY_YAML = """\
kind: toy_kind
width: 32
layers: 1
batch_size: 8
epochs: 1
optim:
  lr: 3.0e-3
  weight_decay: 0.0
  warmup_steps: 2
monitor:
  metric: val/loss
  mode: min
"""


def config(tmp_path, data, *overrides):
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "toy.yaml").write_text(TOY_YAML)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "model=toy",
                                 f"data_dir={data}", f"out_dir={tmp_path / 'out'}", *QUIET,
                                 *overrides])


def test_the_toy_kind_comes_from_its_module_with_its_own_settings(tmp_path, data_dir):  # noqa: F811
    spec = train_spec(config(tmp_path, data_dir, "model.width=16"))
    assert type(spec.model) is kind_def("toy_kind").config and spec.model.width == 16


def test_plansuite_train_trains_a_kind_added_by_a_module_and_a_config(tmp_path, data_dir):  # noqa: F811
    results = run(config(tmp_path, data_dir, "trainer.max_steps=4", "model.layers=2"))
    assert results["kind"] == "toy_kind" and results["global_step"] == 4
    assert "val/loss" in results["metrics"]
    meta = json.loads((tmp_path / "out" / "export" / "plansuite.json").read_text())
    assert meta["kind"] == "toy_kind" and meta["config"]["model"]["layers"] == 2


def test_a_misspelt_or_wrongly_typed_model_key_fails_at_composition_in_one_line(tmp_path):
    """The kinds' dataclasses are the schema Hydra composes against (plansuite/cli/schemas.py):
    no YAML lists the keys, yet a typo or a wrong type stops before any plansuite code runs."""
    import subprocess
    import sys

    for arg, expected in (("model.epoch=3", "error: model.epoch: unknown key (known in model: "
                                            "augment, backbone, batch_size, epochs,"),
                          ("model.optim.lrr=1", "error: model.optim.lrr: unknown key (known in "
                                                "model.optim: betas, lr, warmup_steps, weight_decay"),
                          ("model.batch_size=abc", "error: model.batch_size: Value 'abc' of type "
                                                   "'str' could not be converted to Integer"),
                          ("model.epochs=null", "error: model.epochs: field 'model.epochs' is not "
                                                "Optional")):
        run = subprocess.run([sys.executable, "-m", "plansuite.cli.train", f"data_dir={tmp_path}",
                              "logger=none", f"out_dir={tmp_path / 'out'}", arg],
                             text=True, capture_output=True, timeout=300)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 1 and lines == lines[-1:], run.stderr[-500:]
        assert lines[0].startswith(expected), run.stderr
