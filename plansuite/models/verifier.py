"""The verifier: GPT-2 sequence classification of a step (state, action[, next state]).

Trained on the recipe's labels; validated on each validation set against the simulator's truth.
At the end of every validation epoch the decision threshold is recalibrated on the calibration
set (best balanced accuracy, or best accuracy: ``calibrate_metric``,
:func:`~plansuite.models.verifier_metrics.calibrate_threshold`) and kept in a buffer, so
checkpoints and exports carry it.
"""

from __future__ import annotations

import lightning as L
import torch
from torchmetrics import CatMetric

from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.models.verifier_metrics import (
    binary_report,
    calibrate_threshold,
    check_calibrate_metric,
)


class VerifierModule(L.LightningModule):
    def __init__(self, model, optim: OptimConfig, val_sets: list[str], calibrate_on: str = "auto",
                 config: dict | None = None, calibrate_metric: str = "balanced"):
        super().__init__()
        check_calibrate_metric(calibrate_metric)
        self.model, self.optim, self.val_sets = model, optim, list(val_sets)
        if calibrate_on == "auto":
            calibrate_on = "onpolicy" if "onpolicy" in val_sets else "random"
        if calibrate_on not in val_sets:
            from plansuite.errors import ConfigError

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
