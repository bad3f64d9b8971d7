"""A toy model kind, added the way :mod:`plansuite.models.kinds` says: this module plus one
``model/<name>.yaml`` (``kind: toy_kind``). ``tests/test_train_toy_kind.py`` trains it.

A causal LM over the generator's transitions with a loss on every token and nothing judged at
validation: its own settings are ``width`` and ``layers`` (the backbone's size).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import lightning as L

from plansuite.models.backbone import BackboneConfig, context_length
from plansuite.models.datamodules import GeneratorDataModule
from plansuite.models.factories import make_model, make_tokenizer, optim_defaults
from plansuite.models.kinds import Built, ModelKind, Monitor, RunContext
from plansuite.models.optim import OptimConfig, adamw_with_warmup


@dataclass
class ToyConfig:
    kind: str = "toy_kind"
    width: int = 32
    layers: int = 1
    batch_size: int = 8
    epochs: int = 1
    optim: OptimConfig = field(default_factory=optim_defaults(3e-3, 2))
    monitor: Monitor = field(default_factory=Monitor)

    @property
    def backbone(self) -> BackboneConfig:
        return BackboneConfig(n_layer=self.layers, n_embd=self.width, n_head=2)


class ToyModule(L.LightningModule):
    def __init__(self, model, optim: OptimConfig, config: dict | None = None):
        super().__init__()
        self.model, self.optim = model, optim
        self.save_hyperparameters({"config": config or {}}, logger=False)

    def training_step(self, batch, batch_idx):
        loss = self.model(**batch).loss
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        if dataloader_idx == 0:
            self.log("val/loss", self.model(**batch).loss, add_dataloader_idx=False)

    def configure_optimizers(self):
        return adamw_with_warmup(self.model.parameters(), self.optim,
                                 self.trainer.estimated_stepping_batches)


def build_toy(m: ToyConfig, run: RunContext) -> Built:
    tokenizer = make_tokenizer(m.backbone, run.domain, run.data_dir)
    model = make_model(m.backbone, "causal", tokenizer)
    dm = GeneratorDataModule(run.data_dir, tokenizer, context_length(model.config), m.batch_size,
                             "full", greedy_n=0, seed=run.seed)
    dm.setup()
    return Built(ToyModule(model, m.optim, run.record), dm, tokenizer, {"kind": m.kind})


KIND = ModelKind(ToyConfig, build_toy)
