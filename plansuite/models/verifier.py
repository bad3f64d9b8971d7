"""The verifier: GPT-2 sequence classification of a step (state, action[, next state]).

Trained on the recipe's labels; validated on each validation set against the simulator's truth.
At the end of every validation epoch the decision threshold is recalibrated on the calibration
set (best balanced accuracy, or best accuracy: ``calibrate_metric``,
:func:`~plansuite.models.verifier_metrics.calibrate_threshold`) and kept in a buffer, so
checkpoints and exports carry it.

The model kind ``verifier`` (:mod:`plansuite.models.kinds`): :class:`VerifierConfig` is
``model=verifier``'s settings and :func:`build_verifier` builds the module, its data and its
tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import lightning as L
import torch
from torchmetrics import CatMetric

from plansuite.data.verifier_recipes import OnPolicyConfig
from plansuite.errors import ConfigError
from plansuite.models.backbone import BackboneConfig
from plansuite.models.factories import (
    check_init,
    make_model,
    make_tokenizer,
    optim_defaults,
    start_from_export,
)
from plansuite.models.kinds import Built, ModelKind, Monitor, RunContext
from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.models.verifier_metrics import (
    binary_report,
    calibrate_threshold,
    check_calibrate_metric,
)


@dataclass
class VerifierConfig:
    """``model=verifier``: a sequence-classification verifier (V_base or V_generator)."""

    kind: str = "verifier"
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    init: str = "base"  # base (a fresh backbone: V_base) | generator (the generator export's weights)
    generator_dir: str | None = None  # for init=generator and recipe=onpolicy; adds the on-policy val set
    recipe: str = "random"  # random | relabel | hard | onpolicy: plansuite/data/verifier_recipes.py
    input_kind: str = "state_action"  # state_action | state_action_next | state_action_diff (the last two: onpolicy only)
    onpolicy: OnPolicyConfig = field(default_factory=OnPolicyConfig)
    augment: str = "none"  # none | rename: training texts' objects renamed at random per draw
    calibrate_on: str = "auto"  # validation set for the threshold: onpolicy if present, else random
    calibrate_metric: str = "balanced"  # balanced | accuracy (fewest mistakes at the set's class shares)
    batch_size: int = 32
    epochs: int = 4
    optim: OptimConfig = field(default_factory=optim_defaults(1.0e-3, 50))
    monitor: Monitor = field(default_factory=lambda: Monitor("val/auroc", "max"))


class VerifierModule(L.LightningModule):
    def __init__(self, model, optim: OptimConfig, val_sets: list[str], calibrate_on: str = "auto",
                 config: dict | None = None, calibrate_metric: str = "balanced"):
        super().__init__()
        check_calibrate_metric(calibrate_metric)
        self.model, self.optim, self.val_sets = model, optim, list(val_sets)
        if calibrate_on == "auto":
            calibrate_on = "onpolicy" if "onpolicy" in val_sets else "random"
        if calibrate_on not in val_sets:
            raise ConfigError(f"model.calibrate_on '{calibrate_on}': no such validation set "
                              f"(have: {', '.join(val_sets)})")
        self.calibrate_on, self.calibrate_metric = calibrate_on, calibrate_metric
        self.save_hyperparameters({"config": config or {}}, logger=False)  # logged flat by training.train
        self.register_buffer("threshold", torch.tensor(0.5))
        self.val_probs = torch.nn.ModuleDict({n: CatMetric() for n in val_sets})
        self.val_truth = torch.nn.ModuleDict({n: CatMetric() for n in val_sets})
        self.reports: dict[str, dict] = {}

    def forward(self, input_ids, attention_mask, labels=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self(batch["input_ids"], batch["attention_mask"], batch["labels"]).loss
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: dict, batch_idx: int, dataloader_idx: int = 0) -> None:
        name = self.val_sets[dataloader_idx]
        logits = self(batch["input_ids"], batch["attention_mask"]).logits
        self.val_probs[name].update(torch.softmax(logits.float(), -1)[:, 1])
        self.val_truth[name].update(batch["truth"].float())

    def on_validation_epoch_end(self) -> None:
        collected = {}
        for name in self.val_sets:
            if self.val_truth[name].update_count:
                # 1-D even for a one-example set (CatMetric returns a 0-d tensor for a single value)
                collected[name] = (self.val_probs[name].compute().reshape(-1),
                                   self.val_truth[name].compute().reshape(-1))
            self.val_probs[name].reset()
            self.val_truth[name].reset()
        if self.calibrate_on in collected:
            self.threshold.fill_(calibrate_threshold(*collected[self.calibrate_on],
                                                     self.calibrate_metric))
        threshold = float(self.threshold)
        self.reports = {n: binary_report(p, y, threshold) for n, (p, y) in collected.items()}
        metrics = {"val/threshold": threshold}
        for name, report in self.reports.items():
            metrics.update({f"val/{name}/{k}": float(v) for k, v in report.items()})
        # the monitored metric exists every epoch: a calibration set with no examples this time
        # (e.g. on-policy samples a tiny generator did not produce) scores as uninformative, like
        # a one-class set does in binary_report
        metrics["val/auroc"] = (self.reports[self.calibrate_on]["auroc"]
                                if self.calibrate_on in self.reports else 0.5)
        self.log_dict(metrics, sync_dist=True)

    def configure_optimizers(self):
        return adamw_with_warmup(self.model.parameters(), self.optim,
                                 self.trainer.estimated_stepping_batches)


def build_verifier(m: VerifierConfig, run: RunContext) -> Built:
    from plansuite.data.verifier_recipes import EXTRA_TOKENS, INPUT_KINDS, val_set_names
    from plansuite.models.backbone import add_tokens, context_length
    from plansuite.models.datamodules import VerifierDataModule
    from plansuite.models.export import check_export_domain

    check_init(m.init)
    if m.input_kind not in INPUT_KINDS:
        raise ConfigError(f"model.input_kind '{m.input_kind}': unknown (choose from {', '.join(INPUT_KINDS)})")
    if m.generator_dir:
        check_export_domain(m.generator_dir, "generator", run.domain, "model.generator_dir")
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a generator export")
        tokenizer, model = start_from_export(m.generator_dir, "classifier")
    else:
        tokenizer = make_tokenizer(m.backbone, run.domain, run.data_dir)
        model = make_model(m.backbone, "classifier", tokenizer)
    add_tokens(model, tokenizer, EXTRA_TOKENS.get(m.input_kind, ()))
    dm = VerifierDataModule(run.data_dir, run.domain, tokenizer, context_length(model.config),
                            recipe=m.recipe, input_kind=m.input_kind, batch_size=m.batch_size,
                            generator_dir=m.generator_dir, onpolicy=m.onpolicy,
                            cache_dir=run.out_dir / "data", num_workers=run.num_workers,
                            seed=run.seed, augment=m.augment)
    module = VerifierModule(model, m.optim, val_set_names(m.generator_dir), m.calibrate_on,
                            run.record, m.calibrate_metric)
    meta = {"kind": "verifier", "input_kind": m.input_kind, "init": m.init, "recipe": m.recipe}
    return Built(module, dm, tokenizer, meta)


def verifier_metrics(module: VerifierModule, metrics: list[dict]) -> dict:
    """The threshold and every validation set's report (the calibrated ones, not Lightning's)."""
    return {"threshold": float(module.threshold),
            **{f"{s}/{k}": v for s, r in module.reports.items() for k, v in r.items()}}


def verifier_tags(m: VerifierConfig) -> dict:
    return {"backbone": "generator" if m.init == "generator" else m.backbone.name,
            "init": m.init, "recipe": m.recipe}


KIND = ModelKind(VerifierConfig, build_verifier, metrics=verifier_metrics, tags=verifier_tags,
                 name=lambda m: f"verifier-{m.init}-{m.recipe}",
                 export_meta=lambda module: {"threshold": float(module.threshold)},
                 object_names=True)
