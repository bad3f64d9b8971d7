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
from pathlib import Path

from plansuite.data.verifier_recipes import verifier_input
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.planning.baselines import (
    FastDownwardGenerator,
    OracleVerifier,
    RandomApplicableGenerator,
    SyntheticGenerator,
)
from plansuite.planning.protocols import Generator, GenRequest, Proposal, Verifier, VerifyRequest

GENERATOR_CHOICES = ("random", "synthetic", "fast_downward")
VERIFIER_CHOICES = ("none", "oracle", "oracle_action")


class ModelGenerator:
    """``GeneratorPolicy`` behind the planner interface.

    Requests are grouped by sampling settings (a loop may raise the temperature on retries);
    one ``generate`` call per group with one seed per request, so each completion depends only
    on its own request (batched engine == sequential reference, up to float rounding).
    """

    def __init__(self, policy):
        self.policy = policy

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.temperature, r.top_p, r.max_new_tokens), []).append(i)
        out: list[Proposal] = [Proposal("")] * len(requests)
        for (temperature, top_p, max_new_tokens), index in groups.items():
            excluded = [requests[i].exclude_actions for i in index]
            generated = self.policy.generate([requests[i].prompt for i in index],
                                             temperature=temperature, top_p=top_p,
                                             max_new_tokens=max_new_tokens,
                                             seed=[requests[i].seed for i in index],
                                             exclude_actions=excluded if any(excluded) else None)
            for i, g in zip(index, generated, strict=True):
                out[i] = Proposal(str(g.text), int(g.n_tokens))
        return out


class ModelVerifier:
    """``VerifierScorer`` behind the planner interface; formats its input per ``input_kind``."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.threshold = float(scorer.threshold)
        self.input_kind = scorer.input_kind

    def score(self, requests: Sequence[VerifyRequest]) -> list[float]:
        texts = [verifier_input(self.input_kind, r.state, r.action, r.next_state) for r in requests]
        return [float(v) for v in self.scorer.score(texts)]


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


def check_export_domain(role: str, spec: str, domain_name: str) -> None:
    """An export trained on another domain is refused: its actions would be judged against this
    domain's simulator and every plan read as garbage, with no error. Names are compared in lower
    case, as the PDDL reader writes them."""
    meta_file = Path(str(spec)) / "plansuite.json"
    if not meta_file.is_file():
        return  # not an export (a choice like ``random``), or one that loading reports
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{meta_file}: unreadable ({exc.__class__.__name__})") from exc
    trained = meta.get("domain") if isinstance(meta, dict) else None
    if isinstance(trained, str) and trained.lower() != domain_name:
        raise ConfigError(f"{role}={spec}: trained on domain '{trained}', but the configured domain "
                          f"is '{domain_name}' (choose domain=... to match, or another export)")


def resolve_device(device: str, rank: int = 0) -> str:
    """``auto``: ``cuda:<rank mod #GPUs>`` when CUDA is available, else ``cpu``.

    Anything but cpu, cuda, cuda:N, mps and auto is one line listing those (torch's own message
    for ``device=gpu`` is long and was cut off mid-sentence).
    """
    device = str(device)
    if not re.fullmatch(r"cpu|auto|mps|cuda(:\d+)?", device):
        raise ConfigError(f"device={device}: unknown device (choose from cpu, cuda, cuda:N, mps, "
                          "auto)")
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return f"cuda:{rank % torch.cuda.device_count()}"
    return "cpu"
