"""Command-line entrypoints (Hydra apps). Configs live in the repository's ``conf/`` (shipped in
the wheel as ``plansuite/conf``; :mod:`plansuite.config_dir`)."""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings

from plansuite import CONF_DIR as CONF_DIR  # the configs every app reads

# ${plansuite.sweep_subdir:} and ${plansuite.job_out_dir:...} in conf/: one folder per multirun job.
from plansuite.cli.sweep_dirs import register as _register_sweep_resolvers  # noqa: E402
from plansuite.errors import ConfigError, PlansuiteError, clip, os_error_line

_register_sweep_resolvers()


def quiet_known_warnings() -> None:
    """Two warnings every training run printed that no user can act on: Lightning calling a
    torch API that torch 2.13 deprecates, and ModelCheckpoint missing the monitored validation
    metric at a step checkpoint before the first validation (training validates at the end)."""
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    warnings.filterwarnings("ignore",
                            message=r"`ModelCheckpoint\(monitor=.*could not find the monitored key")


quiet_known_warnings()

# The Makefile's defaults, for the commands run without make: offline, a missing pretrained
# backbone is one line instead of ~40 lines of hub retries (HF_HUB_OFFLINE=0 downloads).
os.environ.setdefault("HF_HUB_OFFLINE", "1")


_REPORTED: list[BaseException] = []  # errors already shown as one line (hydra_errors adds none)


def _fail(line: str, exc: BaseException):
    print(f"error: {line}", file=sys.stderr, flush=True)
    _REPORTED.append(exc)
    sys.exit(1)


def friendly_errors(task):
    """Show a PlansuiteError, an I/O failure (OSError: a full disk, a read-only out_dir) or a
    failed Hydra ``instantiate`` as one line on stderr and exit 1, instead of a traceback."""

    @functools.wraps(task)
    def wrapper(*args, **kwargs):
        try:
            if args:
                check_seeds(args[0])
            return task(*args, **kwargs)
        except PlansuiteError as exc:
            if os.environ.get("PLANSUITE_DEBUG"):
                raise
            _fail(str(exc), exc)
        except OSError as exc:  # the machine's fault (full disk, read-only out_dir): name the path
            if os.environ.get("PLANSUITE_DEBUG"):
                raise
            _fail(os_error_line(exc, _out_dir_of(args)), exc)
        except Exception as exc:
            line = _instantiation_error(exc)
            if line is None or os.environ.get("PLANSUITE_DEBUG"):
                raise
            _fail(line, exc)

    return wrapper


def check_seeds(cfg) -> None:
    """Every ``seed`` of an app's config (``seed``, ``rollout.seed``, ...) is a non-negative
    integer: Hydra keeps ``seed=xyz`` as a string, which would seed nothing reproducibly.

    >>> from omegaconf import OmegaConf
    >>> check_seeds(OmegaConf.create({"seed": 3, "rollout": {"seed": "${seed}"}}))
    >>> check_seeds(OmegaConf.create({"seed": 0, "rollout": {"seed": "xyz"}}))
    Traceback (most recent call last):
    plansuite.errors.ConfigError: rollout.seed='xyz': must be a non-negative integer
    """
    from omegaconf import DictConfig, OmegaConf

    if not isinstance(cfg, DictConfig):
        return
    paths = ["seed", *(f"{key}.seed" for key, node in cfg.items_ex(resolve=False)
                       if isinstance(node, DictConfig))]
    for path in paths:
        value = OmegaConf.select(cfg, path, default=0, throw_on_missing=False)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{path}={value!r}: must be a non-negative integer")


def _out_dir_of(args: tuple) -> str | None:
    """``out_dir=...`` of the app's config, to name where a write without a file name failed."""
    out_dir = getattr(args[0], "out_dir", None) if args else None
    return None if out_dir is None else f"out_dir={out_dir}"


def _instantiation_error(exc: Exception) -> str | None:
    """Hydra's ``instantiate`` failing (``trainer=gpu`` without a GPU, a bad ``_target_``
    argument) as one line: the config key, the class and the cause; None for anything else."""
    from hydra.errors import InstantiationException

    if not isinstance(exc, InstantiationException):
        return None
    text = str(exc)
    key = re.search(r"full_key: (\S+)", text)
    target = re.search(r"target '([^']+)'", text)
    cause = exc.__cause__ or exc.__context__
    detail = f"{type(cause).__name__}: {cause}" if cause else text.strip().splitlines()[-1]
    return clip(f"{key.group(1) if key else 'config'}: cannot build "
                f"{target.group(1) if target else 'an object'} ({detail})", 400)


def hydra_errors(config_name: str):
    """Around a ``@hydra.main`` entry point: when Hydra itself fails (an unknown group option or
    key, an output directory it cannot create) it prints several lines and exits 1; end them
    with one ``error:`` line that names the setting and what would be valid."""

    def decorate(main):
        @functools.wraps(main)
        def wrapper(*args, **kwargs):
            from plansuite.cli.hydra_diagnosis import (
                blocked_out_dir,
                composition_error_before_start,
                explain,
                one_command_line,
                unknown_option_before_start,
            )

            _REPORTED.clear()  # this call's failures only (tests call several in one process)
            argv = sys.argv[1:]
            blocked = (unknown_option_before_start(argv) or composition_error_before_start(config_name, argv)
                       or blocked_out_dir(config_name, argv))
            if blocked:
                print(f"error: {blocked}", file=sys.stderr, flush=True)
                sys.exit(1)
            try:
                return main(*args, **kwargs)
            except ValueError as exc:
                line = one_command_line(exc)
                if line is None:
                    raise
                print(f"error: {line}", file=sys.stderr, flush=True)
                sys.exit(1)
            except SystemExit as exc:
                if exc.code not in (0, None) and not _REPORTED:
                    line = explain(config_name, sys.argv[1:])
                    if line:
                        print(f"error: {line}", file=sys.stderr, flush=True)
                raise

        return wrapper

    return decorate
