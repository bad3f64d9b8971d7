"""One ``error:`` line for the failures Hydra reports itself, before any plansuite code runs.

Hydra prints an unknown group option or key in 6-20 lines (search path, "set HYDRA_FULL_ERROR")
and a run directory it cannot create as a bare exception. :func:`explain` re-reads the command
line, composes the config again to find the setting at fault, and says it in the suite's form:
the setting, what is wrong, and what would be valid.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

from plansuite import CONF_DIR
from plansuite.errors import clip, os_error_line
from plansuite.settings import override_key


def _first_choice(override: str) -> str:
    """A sweep ``k=1,8,16`` as its first value: enough to find a bad key or option."""
    key, value = override.split("=", 1)
    if "," in value and value[:1] not in "[{'\"":
        value = value.split(",", 1)[0]
    return f"{key}={value}"


def _compose(config_name: str, overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            return compose(config_name=config_name, overrides=overrides, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()


def _messages(exc: BaseException) -> str:
    seen, parts = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


# A group option as a plain name (``planner=generator``, ``experiment=common/paper``); sweep
# functions (``choice(a,b)``), lists and interpolations are left to Hydra.
_PLAIN_CHOICE = re.compile(r"[\w./-]+")
# Command-line flags that add config folders: options may then live outside the suite's conf/.
_SEARCH_PATH_FLAGS = ("--config-dir", "-cd", "--config-path", "-cp")


# Options that moved to a group of their own, by their old spelling: the line says the new one.
MOVED_OPTIONS = {f"dataset=nl2pddl_{name}": f"nl2pddl_dataset={name}"
                 for name in ("blocksworld", "gripper", "fuel", "timed")}


def unknown_option(overrides: list[str]) -> str | None:
    """``planner=nonexistent``: the group's options are the YAML files under its folder.

    >>> unknown_option(["planner=nonexistent"]).split(" (")[0]
    'planner=nonexistent: unknown option'
    >>> unknown_option(["dataset=nl2pddl_gripper"])
    'dataset=nl2pddl_gripper: the NL→PDDL presets are a group of their own: write nl2pddl_dataset=gripper'
    >>> unknown_option(["planner=generator", "experiment=common/paper", "planner=choice(a,b)"]) is None
    True
    """
    for override in overrides:
        group = override_key(override)
        folder = Path(CONF_DIR) / group
        if group.startswith("hydra") or not folder.is_dir():
            continue
        value = override.split("=", 1)[1]
        for choice in value.split(",") if value[:1] not in "[{" else [value]:
            if (choice != "null" and _PLAIN_CHOICE.fullmatch(choice)
                    and not (folder / f"{choice}.yaml").is_file()):
                if f"{group}={choice}" in MOVED_OPTIONS:
                    return (f"{group}={choice}: the NL→PDDL presets are a group of their own: "
                            f"write {MOVED_OPTIONS[f'{group}={choice}']}")
                options = sorted(p.stem for p in folder.glob("*.yaml"))  # (sub-folders: other groups)
                return f"{group}={choice}: unknown option (choose from {', '.join(options)})"
    return None


def _adds_config_folders(argv: list[str]) -> bool:
    return any(a.split("=", 1)[0] in _SEARCH_PATH_FLAGS for a in argv) or any(
        override_key(a).startswith("hydra.searchpath") for a in argv)


def unknown_option_before_start(argv: list[str]) -> str | None:
    """:func:`unknown_option` checked before Hydra starts, so its own report (search path,
    "set HYDRA_FULL_ERROR") never precedes ours, and a sweep with one bad option fails before
    its good jobs run. Not when the command line adds config folders (the option may be there)."""
    if _adds_config_folders(argv):
        return None
    return unknown_option([a for a in argv if "=" in a and not a.startswith("-")])


# Config options that a plugin package provides, and the extra that installs it.
PLUGIN_EXTRAS = {"hydra/sweeper/optuna": "optuna", "hydra/launcher/submitit_slurm": "slurm"}


def missing_extra(exc: BaseException, overrides: list[str]) -> str | None:
    """``hparams_search=temperature`` without the Optuna sweeper: say which extra to install,
    naming the override whose config asks for the plugin.

    >>> missing_extra(ValueError("In 'hydra/config': Could not find 'hydra/sweeper/optuna'"),
    ...               ["generator=random", "hparams_search=temperature"])
    "hparams_search=temperature: needs hydra/sweeper=optuna, a plugin that is not installed: pip install 'plansuite[optuna]'"
    """
    found = re.search(r"Could not find '([^']+)'", _messages(exc))
    if not found or found.group(1) not in PLUGIN_EXTRAS:
        return None
    group, _, name = found.group(1).rpartition("/")

    def asks_for_it(override: str) -> bool:
        key, _, choice = override.partition("=")
        option = Path(CONF_DIR) / override_key(key) / f"{choice}.yaml"
        return _PLAIN_CHOICE.fullmatch(choice) is not None and option.is_file() and name in option.read_text()

    via = next((o for o in overrides if asks_for_it(o)), None)
    return (f"{via + ': ' if via else ''}needs {group}={name}, a plugin that is not installed: "
            f"pip install 'plansuite[{PLUGIN_EXTRAS[found.group(1)]}]'")


def composition_error_before_start(config_name: str, argv: list[str]) -> str | None:
    """:func:`unknown_key` and :func:`missing_extra` checked before Hydra starts (one
    composition, a tenth of a second), so Hydra's own report never precedes ours; a sweep is
    checked at its first values."""
    given = [a for a in argv if "=" in a and not a.startswith("-")]
    if not given or _adds_config_folders(argv):
        return None
    overrides = [_first_choice(a) for a in given]
    try:
        _compose(config_name, overrides)
    except Exception as exc:  # anything else is left to Hydra's own report
        return (unknown_key(config_name, overrides, exc) or wrong_type(exc)
                or missing_extra(exc, overrides))
    return None


# Hydra's commands; it refuses two of them at once with a ValueError traceback.
_COMMANDS = "-m/--multirun, --cfg, --run, --info and --shell-completion"


def one_command_line(exc: BaseException) -> str | None:
    """Hydra's "Only one of --run, --multirun, --cfg ..." as the suite's line, else None.

    >>> one_command_line(ValueError("Only one of --run, --multirun, --cfg, --info and "
    ...                             "--shell_completion can be specified")).split(";")[0]
    'give only one of -m/--multirun, --cfg, --run, --info and --shell-completion'
    """
    if isinstance(exc, ValueError) and str(exc).startswith("Only one of --run, --multirun"):
        return (f"give only one of {_COMMANDS}; --cfg shows one run's config (drop -m and give "
                "one value per key)")
    return None


def unknown_key(config_name: str, overrides: list[str], exc: BaseException) -> str | None:
    """``planner.kk=3``: name the key and the keys its parent does have."""
    text = _messages(exc)
    found = re.search(r"full_key: (\S+)", text)
    # a plain node ("not in struct"), or a structured config's ("Key 'kk' not in 'GeneratorConfig'")
    if not found or ("not in struct" not in text and not re.search(r"Key '[^']+' not in '", text)):
        return None
    full = found.group(1)
    parent = full.rpartition(".")[0]
    try:
        base = _compose(config_name, [o for o in overrides if override_key(o) != full])
    except Exception:  # another bad override as well: report this one without the list
        return f"{full}: unknown key (to add a new one, write +{full}=...)"
    node = OmegaConf.select(base, parent) if parent else base
    keys = sorted(k for k in node if k != "hydra") if isinstance(node, DictConfig) else []
    return (f"{full}: unknown key (known in {parent or config_name}: {', '.join(keys)}; "
            f"to add a new one, write +{full}=...)")


def wrong_type(exc: BaseException) -> str | None:
    """``model.batch_size=abc``: a structured config's (:mod:`plansuite.cli.schemas`) typed key
    given a value of another type, as Hydra says it, on one line.

    >>> wrong_type(ValueError("Error merging override model.batch_size=abc\\nValue 'abc' of type "
    ...                       "'str' could not be converted to Integer\\n    full_key: model.batch_size"))
    "model.batch_size: Value 'abc' of type 'str' could not be converted to Integer"
    """
    text = _messages(exc)
    found = re.search(r"full_key: (\S+)", text)
    reason = re.search(r"^(Value .*|field '.*' is not Optional|Invalid type .*)$",
                       text, re.MULTILINE)
    if not found or not reason:
        return None
    return clip(f"{found.group(1)}: {reason.group(1).strip()}", 300)


def unwritable_run_dir(cfg: DictConfig) -> str | None:
    """Hydra creates ``hydra.run.dir`` (our ``out_dir``) before the app starts."""
    try:
        run_dir = Path(str(OmegaConf.select(cfg, "hydra.run.dir")))
    except Exception:
        return None
    return _blocked(run_dir)


def blocked_out_dir(config_name: str, argv: list[str]) -> str | None:
    """Checked before Hydra starts, for apps whose run directory is ``out_dir``: one Hydra could
    not create makes it print a traceback (an OSError in its own ``mkdir``), not a message."""
    primary = yaml.safe_load((Path(CONF_DIR) / f"{config_name}.yaml").read_text()) or {}
    if ((primary.get("hydra") or {}).get("run") or {}).get("dir") != "${out_dir}":
        return None  # the app creates out_dir itself (plansuite-data) and says what is wrong
    if "-m" in argv or "--multirun" in argv:
        return None  # each job's directory is made by the launcher, under the sweep dir
    given = [a.split("=", 1)[1] for a in argv if override_key(a) == "out_dir" and "=" in a]
    if not given or not given[-1]:
        return None
    return _blocked(Path(given[-1])) or _full(Path(given[-1]))


def _full(run_dir: Path) -> str | None:
    """A full disk (or a file size limit) makes Hydra's first write -- the run's config -- a
    traceback; probe the run directory with a small write before Hydra starts."""
    probe = run_dir / f".plansuite-probe-{os.getpid()}"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"\0" * 65536)
    except OSError as exc:
        return os_error_line(exc, f"out_dir={run_dir}")
    finally:
        probe.unlink(missing_ok=True)
    return None


def _blocked(run_dir: Path) -> str | None:
    blocker = next((p for p in (run_dir, *run_dir.parents) if p.exists()), None)
    if blocker is None:
        return None
    if not blocker.is_dir():
        what = "is a file" if blocker == run_dir else f"{blocker} is a file"
        return f"out_dir={run_dir}: cannot create the output directory ({what})"
    if blocker != run_dir and not os.access(blocker, os.W_OK | os.X_OK):
        return f"out_dir={run_dir}: cannot create the output directory ({blocker} is not writable)"
    return None


def explain(config_name: str, argv: list[str]) -> str | None:
    """The one line for a failed Hydra start, or None when it is not one of these cases."""
    given = [a for a in argv if "=" in a and not a.startswith("-")]
    line = unknown_option(given)  # every value of a sweep
    if line:
        return line
    overrides = [_first_choice(a) for a in given]
    try:
        cfg = _compose(config_name, overrides)
    except Exception as exc:
        line = (unknown_key(config_name, overrides, exc) or wrong_type(exc)
                or missing_extra(exc, overrides))
        if line is None:
            first = next((ln.strip() for ln in _messages(exc).splitlines() if ln.strip()), "")
            line = clip(first, 300) if first else None
        return line
    return unwritable_run_dir(cfg)
