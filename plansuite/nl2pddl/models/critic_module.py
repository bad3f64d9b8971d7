"""The NL→PDDL critic: GPT-2 sequence classification of (description, problem) into the
dataset's labels (match, or the kind of mismatch: object, init, goal for the classical domains;
value, direction, fluent, duration for the PDDL 2.1 ones).

A sibling of :class:`~plansuite.models.verifier.VerifierModule` with more than two classes and
no threshold: the prediction is the most probable label. Validation reports the exact-label
accuracy, the match/mismatch detection rate and both per true kind
(:func:`plansuite.nl2pddl.judging.critic.critic_report`); ``val/accuracy`` picks the best checkpoint.

The model kind ``critic`` (:mod:`plansuite.models.kinds`): :class:`CriticConfig` is
``model=critic``'s settings and :func:`build_critic` builds the module, its data and its tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import lightning as L
import torch
from torchmetrics import CatMetric

from plansuite.errors import ConfigError
from plansuite.models.backbone import BackboneConfig
from plansuite.models.factories import check_init, make_model, optim_defaults, start_from_export
from plansuite.models.kinds import Built, ModelKind, Monitor, RunContext
from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.nl2pddl.judging.critic import CRITIC_LABELS, critic_report
from plansuite.nl2pddl.models.problem_generator_module import text_backbone


@dataclass
class CriticConfig:
    """``model=critic``: the NL -> PDDL critic (match | the dataset's mismatch kinds)."""

    kind: str = "critic"
    backbone: BackboneConfig = field(default_factory=text_backbone)
    init: str = "base"  # base (a fresh backbone) | generator (a problem_generator export's weights)
    generator_dir: str | None = None
    vocab_size: int = 2048
    batch_size: int = 32
    epochs: int = 4
    optim: OptimConfig = field(default_factory=optim_defaults(1.0e-3, 50))
    monitor: Monitor = field(default_factory=lambda: Monitor("val/accuracy", "max"))


class CriticModule(L.LightningModule):
    def __init__(self, model, optim: OptimConfig, config: dict | None = None,
                 labels: tuple[str, ...] = CRITIC_LABELS):
        super().__init__()
        self.model, self.optim, self.labels = model, optim, tuple(labels)
        self.save_hyperparameters({"config": config or {}}, logger=False)  # logged flat by training.train
        self.val_pred, self.val_truth = CatMetric(), CatMetric()
        self.report: dict = {}

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.model(**batch).loss  # batch: input_ids, attention_mask, labels
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        self.val_pred.update(logits.argmax(-1).float())
        self.val_truth.update(batch["labels"].float())

    def on_validation_epoch_end(self) -> None:
        if not self.val_truth.update_count:
            return
        pred = [self.labels[int(i)] for i in self.val_pred.compute().flatten().tolist()]
        truth = [self.labels[int(i)] for i in self.val_truth.compute().flatten().tolist()]
        self.val_pred.reset()
        self.val_truth.reset()
        self.report = critic_report(truth, pred, self.labels)
        metrics = {"val/accuracy": self.report["accuracy"], "val/detection": self.report["detection"]}
        for kind, rates in self.report["per_kind"].items():
            metrics.update({f"val/{kind}/accuracy": rates["accuracy"], f"val/{kind}/detection": rates["detection"]})
        self.log_dict(metrics, prog_bar=False, sync_dist=True)

    def configure_optimizers(self):
        return adamw_with_warmup(self.model.parameters(), self.optim,
                                 self.trainer.estimated_stepping_batches)


def build_critic(m: CriticConfig, run: RunContext) -> Built:
    from plansuite.models.backbone import context_length
    from plansuite.models.export import check_export_domain
    from plansuite.nl2pddl.data.dataset import load_nl2pddl_manifest
    from plansuite.nl2pddl.models.text_datamodules import (
        CriticDataModule,
        dataset_critic_labels,
        make_text_tokenizer,
    )

    load_nl2pddl_manifest(run.data_dir)
    classes = dataset_critic_labels(run.data_dir)  # classical: match/object/init/goal
    labels = dict(enumerate(classes))
    check_init(m.init)
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a problem_generator export")
        check_export_domain(m.generator_dir, "problem_generator", run.domain, "model.generator_dir")
        tokenizer, model = start_from_export(m.generator_dir, "classifier", labels)
    else:
        tokenizer = make_text_tokenizer(m.backbone, m.vocab_size, run.data_dir, m.kind, run.domain)
        model = make_model(m.backbone, "classifier", tokenizer, labels)
    dm = CriticDataModule(run.data_dir, tokenizer, context_length(model.config), m.batch_size,
                          run.num_workers, run.seed, classes)
    dm.setup()
    module = CriticModule(model, m.optim, run.record, classes)
    return Built(module, dm, tokenizer, {"kind": m.kind, "labels": list(classes), "init": m.init,
                                         "generator_dir": str(Path(m.generator_dir)) if m.generator_dir else None})


KIND = ModelKind(CriticConfig, build_critic)
