"""Where the Hydra configs are: the repository's top-level ``conf/`` in a source checkout (and an
editable install), ``plansuite/conf`` inside an installed wheel (``setup.py`` maps the one onto
the other when building)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
INSTALLED_CONF = _PACKAGE / "conf"  # a wheel's copy
SOURCE_CONF = _PACKAGE.parent / "conf"  # the checkout's


def config_dir() -> Path:
    """The wheel's copy first: an installed ``plansuite`` must not pick up some unrelated
    ``conf/`` folder that happens to sit next to ``site-packages``."""
    for candidate in (INSTALLED_CONF, SOURCE_CONF):
        if (candidate / "eval.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"plansuite's configs are neither in {INSTALLED_CONF} nor in {SOURCE_CONF}")
