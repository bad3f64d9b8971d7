"""The generator: a causal LM that completes ``GOAL/STATE`` prompts with ``ACTION/NEXT STATE``.

Validation reports the token-weighted loss and perplexity on the val split, and decodes a fixed
val subset greedily (loader 1) and judges it with the simulator: the rate of parseable outputs,
of applicable actions and of exactly right next states.
"""

from __future__ import annotations

import lightning as L
import torch
from torchmetrics import MeanMetric

from plansuite.data.judged import judge_texts
from plansuite.models.inference import GeneratorPolicy
from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.pddl.judge import StepVerdict
from plansuite.pddl.model import Domain
from plansuite.pddl.simulator import TaskCache


class GeneratorModule(L.LightningModule):
    def __init__(self, model, tokenizer, domain: Domain, optim: OptimConfig,
                 max_new_tokens: int = 64, config: dict | None = None):
        super().__init__()
        self.model, self.tokenizer, self.domain = model, tokenizer, domain
        self.optim, self.max_new_tokens = optim, max_new_tokens
        self.save_hyperparameters({"config": config or {}}, logger=False)  # logged flat by training.train  # checkpoints carry their config
        self.tasks = TaskCache(domain)
        self.val_loss = MeanMetric()
        # rates over the greedily decoded val subset, logged as val/<name> (subclasses replace it)
        self.val_greedy = torch.nn.ModuleDict(
            {name: MeanMetric() for name in ("parseable", "action_valid", "next_state_exact")})

    def forward(self, input_ids, attention_mask, labels=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self(**batch).loss
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if dataloader_idx == 0:
            targets = (batch["labels"][:, 1:] != -100).sum()  # HF shifts labels by one
            self.val_loss.update(self(**batch).loss, weight=targets)
            return
        records = [self.trainer.datamodule.greedy_records[i] for i in batch.tolist()]
        policy = GeneratorPolicy(self.model, self.tokenizer, self.max_new_tokens)
        texts = [g.text for g in policy.generate([r.prompt for r in records], temperature=0)]
        rates = self.val_greedy
        for judged in judge_texts(self.tasks, records, texts):
            rates["parseable"].update(float(judged.verdict is not StepVerdict.UNPARSEABLE))
            rates["action_valid"].update(float(judged.verdict in (StepVerdict.OK, StepVerdict.BAD_NEXT_STATE)))
            rates["next_state_exact"].update(float(judged.verdict is StepVerdict.OK))

    def on_validation_epoch_end(self) -> None:
        loss = self.val_loss.compute()
        metrics = {"val/loss": loss, "val/perplexity": torch.exp(loss.clamp(max=50))}
        if any(m.update_count for m in self.val_greedy.values()):  # updated together
            metrics.update({f"val/{name}": m.compute() for name, m in self.val_greedy.items()})
        self.log_dict(metrics, prog_bar=True, sync_dist=True)
        for m in (self.val_loss, *self.val_greedy.values()):
            m.reset()

    def configure_optimizers(self):
        return adamw_with_warmup(self.model.parameters(), self.optim,
                                 self.trainer.estimated_stepping_batches)

