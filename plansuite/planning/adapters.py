"""From config values to generator/verifier objects: model exports or symbolic stand-ins.

``generator`` is an export directory, ``random`` (the random baseline), ``fast_downward`` (the
classical planner's plan, step by step) or ``synthetic`` (a goal-directed fake with known error rates); ``verifier`` is an export directory, ``none``,
``oracle`` or ``oracle_action``. :mod:`plansuite.models.inference` (and so torch) is imported
only when an export is given, so the planners run, and are tested, without any model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from plansuite.data.augment import (
    boundary_mapping,
    rename_atoms,
    rename_codec_text,
    vocabulary_names,
)
from plansuite.data.verifier_recipes import verifier_input
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.pddl.model import Domain, Problem
from plansuite.planning.baselines import (
    FastDownwardGenerator,
    OracleVerifier,
    RandomApplicableGenerator,
    SyntheticGenerator,
)
from plansuite.planning.protocols import Generator, GenRequest, Proposal, Verifier, VerifyRequest

GENERATOR_CHOICES = ("random", "synthetic", "fast_downward")
VERIFIER_CHOICES = ("none", "oracle", "oracle_action")


class ModelNames:
    """The names a model knows, and the renaming of each instance's objects into them.

    A model only ever sees the object names it was trained on: before a request reaches it,
    the instance's objects are renamed by :func:`plansuite.data.augment.boundary_mapping`
    (deterministic, type-preserving; the identity when the model knows every name), and what it
    answers is renamed back, so plans come out in the instance's own names. The names are the
    export's ``object_names``; an older export without them falls back to the names its atom
    tokenizer spells (a BPE export without them is not renamed). Requests without a task (test
    doubles) are not renamed.
    """

    def __init__(self, model):
        self.model = model
        self.known: dict[str, list[str]] | None = None
        self.mappings: dict[tuple, tuple[dict[str, str], dict[str, str]]] = {}

    def names(self, domain: Domain) -> dict[str, list[str]] | None:
        meta = getattr(self.model, "meta", None) or {}
        if self.known is None and "object_names" in meta:
            names = meta["object_names"]
            if not (isinstance(names, dict) and all(isinstance(v, list) for v in names.values())):
                raise ConfigError("object_names in the export's plansuite.json: expected "
                                  "{type: [names]}, found " + type(names).__name__)
            self.known = {str(t): [str(n) for n in v] for t, v in names.items()}
        elif self.known is None and meta.get("tokenizer") == "atom":
            self.known = vocabulary_names(list(self.model.tokenizer.get_vocab()), domain)
        return self.known

    def mapping(self, instance: str, problem: Problem, domain: Domain) -> tuple[dict, dict]:
        """(instance -> model names, model -> instance names); empty for the identity."""
        key = (instance, tuple(sorted(problem.objects.items())))
        if key not in self.mappings:
            known = self.names(domain)
            forward = {} if known is None else boundary_mapping(problem.objects, known, instance)
            self.mappings[key] = forward, {v: k for k, v in forward.items()}
        return self.mappings[key]

    def of(self, request: GenRequest | VerifyRequest) -> tuple[dict, dict]:
        task = request.task
        return ({}, {}) if task is None else self.mapping(request.instance, task.problem, task.domain)

    def check(self, instances, domain: Domain) -> None:
        """Every instance's renaming, before planning: too many objects is one line now."""
        for inst in instances:
            self.mapping(inst.id, inst.problem, domain)


class ModelGenerator:
    """``GeneratorPolicy`` behind the planner interface.

    Requests are grouped by sampling settings (a loop may raise the temperature on retries);
    one ``generate`` call per group with one seed per request, so each completion depends only
    on its own request (batched engine == sequential reference, up to float rounding).
    """

    def __init__(self, policy):
        self.policy = policy
        self.names = ModelNames(policy)

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.temperature, r.top_p, r.max_new_tokens), []).append(i)
        maps = [self.names.of(r) for r in requests]
        requests = [r if not m[0] else replace(r, goal=rename_atoms(r.goal, m[0]),
                                               state=rename_atoms(r.state, m[0]),
                                               exclude_actions=rename_atoms(r.exclude_actions, m[0]))
                    for r, m in zip(requests, maps, strict=True)]
        out: list[Proposal] = [Proposal("")] * len(requests)
        for (temperature, top_p, max_new_tokens), index in groups.items():
            excluded = [requests[i].exclude_actions for i in index]
            generated = self.policy.generate([requests[i].prompt for i in index],
                                             temperature=temperature, top_p=top_p,
                                             max_new_tokens=max_new_tokens,
                                             seed=[requests[i].seed for i in index],
                                             exclude_actions=excluded if any(excluded) else None)
            for i, g in zip(index, generated, strict=True):
                back = maps[i][1]
                out[i] = Proposal(rename_codec_text(str(g.text), back) if back else str(g.text),
                                  int(g.n_tokens))
        return out


class ModelVerifier:
    """``VerifierScorer`` behind the planner interface; formats its input per ``input_kind``."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.threshold = float(scorer.threshold)
        self.input_kind = scorer.input_kind
        self.names = ModelNames(scorer)

    def score(self, requests: Sequence[VerifyRequest]) -> list[float]:
        texts = []
        for r in requests:
            forward = self.names.of(r)[0]
            state, action, next_state = (r.state, r.action, r.next_state) if not forward else (
                rename_atoms(r.state, forward), rename_atoms((r.action,), forward)[0],
                rename_atoms(r.next_state, forward))
            texts.append(verifier_input(self.input_kind, state, action, next_state))
        return [float(v) for v in self.scorer.score(texts)]


def check_instance_names(models, instances, domain: Domain) -> None:
    """Every instance's renaming into each learned model's names, before planning starts (an
    instance with more objects than a model knows names is one line, not a failure mid-run)."""
    for model in models:
        if isinstance(model, ModelGenerator | ModelVerifier):
            model.names.check(instances, domain)


def load_generator(spec: str, device: str = "cpu", synthetic: dict | None = None,
                   domain_file: str | Path | None = None) -> Generator:
    """``domain_file``: the PDDL file ``fast_downward`` plans with."""
    if spec == "random":
        return RandomApplicableGenerator()
    if spec == "synthetic":
        return SyntheticGenerator(**(synthetic or {}))
    if spec == "fast_downward":
        if domain_file is None:
            raise ConfigError("generator=fast_downward: needs the domain file it plans with")
        return FastDownwardGenerator(domain_file)
    path = _export_dir("generator", spec, GENERATOR_CHOICES)
    inference = _inference_module("generator", spec)
    return ModelGenerator(_load(inference.GeneratorPolicy, "generator", path, device))


def load_verifier(spec: str, device: str = "cpu", threshold: float | None = None) -> Verifier | None:
    """``threshold`` replaces a verifier export's calibrated threshold (a learned verifier only)."""
    if threshold is not None and (spec in (None, *VERIFIER_CHOICES) or not 0 <= threshold <= 1):
        raise ConfigError(f"verifier_threshold={threshold}: give a value in [0, 1] with a learned "
                          f"verifier export (verifier={spec})")
    if spec in ("none", None):
        return None
    if spec in ("oracle", "oracle_action"):
        return OracleVerifier(check_next_state=spec == "oracle")
    path = _export_dir("verifier", spec, VERIFIER_CHOICES)
    inference = _inference_module("verifier", spec)
    scorer = _load(inference.VerifierScorer, "verifier", path, device)
    if threshold is not None:
        scorer.threshold = float(threshold)
    return ModelVerifier(scorer)


def _export_dir(role: str, spec: str, choices: tuple[str, ...]) -> Path:
    path = Path(str(spec))
    if not path.is_dir():
        raise ConfigError(f"{role}={spec}: no such export directory (give a directory written by "
                          f"plansuite-train, or one of: {', '.join(choices)})")
    return path


def _inference_module(role: str, spec: str):
    try:
        from plansuite.models import inference
    except ImportError as exc:
        raise ConfigError(f"{role}={spec}: model exports need plansuite.models.inference, which "
                          f"is not available ({exc})") from exc
    return inference


def _load(cls, role: str, path: Path, device: str):
    try:
        return cls.from_export(str(path), device=device)
    except PlansuiteError:
        raise
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise ConfigError(f"{path}: cannot load the {role} export ({detail})") from exc


def tokenizer_fingerprint(export: Path) -> str | None:
    """Digest of an export's vocabulary (BPE vocab + merges), or None if it has no tokenizer files.

    Only the vocabulary counts: padding or special-token settings may differ between a
    generator and a verifier trained from it.
    """
    for folder in (export, export / "tokenizer"):
        fast = folder / "tokenizer.json"
        if fast.is_file():
            model = json.loads(fast.read_text()).get("model", {})
            payload = json.dumps([model.get("vocab"), model.get("merges")], sort_keys=True)
            return hashlib.sha256(payload.encode()).hexdigest()
        vocab = folder / "vocab.json"
        if vocab.is_file():
            merges = folder / "merges.txt"
            payload = json.dumps(json.loads(vocab.read_text()), sort_keys=True) + (
                merges.read_text() if merges.is_file() else "")
            return hashlib.sha256(payload.encode()).hexdigest()
    return None


def check_same_tokenizer(generator: str | Path, verifier: str | Path) -> None:
    """One error line when both exports exist and their vocabularies differ."""
    generator, verifier = Path(generator), Path(verifier)
    if not (generator.is_dir() and verifier.is_dir()):
        return
    g, v = tokenizer_fingerprint(generator), tokenizer_fingerprint(verifier)
    if g is not None and v is not None and g != v:
        raise ConfigError(f"verifier={verifier}: its tokenizer differs from the generator's "
                          f"({generator}); use a verifier trained with the generator's tokenizer")


def check_device(device: str) -> str:
    """``device`` if it is cpu, cuda, cuda:N, mps or auto; else one line listing those (torch's
    own message for ``device=gpu`` is long and was cut off mid-sentence).

    >>> check_device("tpu")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: device=tpu: unknown device (choose from cpu, cuda, cuda:N, mps, auto)
    """
    device = str(device)
    if not re.fullmatch(r"cpu|auto|mps|cuda(:\d+)?", device):
        raise ConfigError(f"device={device}: unknown device (choose from cpu, cuda, cuda:N, mps, "
                          "auto)")
    return device


def resolve_device(device: str, rank: int = 0) -> str:
    """``auto``: ``cuda:<rank mod #GPUs>`` when CUDA is available, else ``cpu``; an unknown
    device is refused (:func:`check_device`)."""
    device = check_device(device)
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return f"cuda:{rank % torch.cuda.device_count()}"
    return "cpu"
