"""The NL→PDDL critic: GPT-2 sequence classification of (description, problem) into the
dataset's labels (match, or the kind of mismatch: object, init, goal for the classical domains;
value, direction, fluent, duration for the PDDL 2.1 ones).

A sibling of :class:`~plansuite.models.verifier.VerifierModule` with more than two classes and
no threshold: the prediction is the most probable label. Validation reports the exact-label
accuracy, the match/mismatch detection rate and both per true kind
(:func:`plansuite.nl2pddl.judging.critic.critic_report`); ``val/accuracy`` picks the best checkpoint.
"""

from __future__ import annotations

import lightning as L
import torch
from torchmetrics import CatMetric

from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.nl2pddl.judging.critic import CRITIC_LABELS, critic_report


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
