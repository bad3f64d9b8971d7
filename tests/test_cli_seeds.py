"""``seed=xyz`` (kept by Hydra as a string) is one error line in every Hydra CLI, before any work."""

from __future__ import annotations

import importlib

import pytest
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR

APPS = ["data", "train", "eval", "nl2pddl", "skills"]


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("seed", ["xyz", "-1", "true", "1.5"])
def test_a_seed_that_is_not_a_non_negative_integer_is_one_line(app, seed, capsys):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(app, [f"seed={seed}"])
    with pytest.raises(SystemExit) as ended:
        importlib.import_module(f"plansuite.cli.{app}").run(cfg)
    err = capsys.readouterr().err.strip().splitlines()
    assert ended.value.code == 1 and len(err) == 1, err
    assert err[0].startswith("error: seed=") and err[0].endswith("must be a non-negative integer")


def test_a_nested_seed_is_checked_too(capsys):
    from plansuite.cli import skills

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("skills", ["rollout.seed=abc"])
    with pytest.raises(SystemExit):
        skills.run(cfg)
    assert capsys.readouterr().err.strip() == ("error: rollout.seed='abc': must be a non-negative "
                                               "integer")
