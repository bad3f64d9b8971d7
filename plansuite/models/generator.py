"""The generator: a causal LM that completes ``GOAL/STATE`` prompts with ``ACTION/NEXT STATE``.

Validation reports the token-weighted loss and perplexity on the val split, and decodes a fixed
val subset greedily (loader 1) and judges it with the simulator: the rate of parseable outputs,
of applicable actions and of exactly right next states.

The model kind ``generator`` (:mod:`plansuite.models.kinds`): :class:`GeneratorConfig` is
``model=generator``'s settings and :func:`build_generator` builds the module, its data and its
tokenizer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import lightning as L
import torch
from torchmetrics import MeanMetric

from plansuite.data.generator_recipes import FinetuneConfig
from plansuite.data.judged import judge_texts
from plansuite.errors import ConfigError
from plansuite.jsonl import write_atomic
from plansuite.models.backbone import BackboneConfig
from plansuite.models.factories import make_model, make_tokenizer, optim_defaults, start_from_export
from plansuite.models.inference import GeneratorPolicy
from plansuite.models.kinds import Built, ModelKind, Monitor, RunContext
from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.pddl.judge import StepVerdict
from plansuite.pddl.model import Domain
from plansuite.pddl.simulator import TaskCache


@dataclass
class GeneratorConfig:
    """``model=generator``: the GPT-2 generator of transitions (``conf/model/generator.yaml``
    chooses the backbone; these are the defaults)."""

    kind: str = "generator"
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    # Training-data recipes (plansuite/data/generator_recipes.py); the paper's are the defaults.
    trajectories: str = "walk"  # walk (random walks) | shortest (their shortest paths: needs a
    #                             dataset built with dataset.shortest_paths=true; data/shortest.py)
    train_transitions: int | None = None  # only the first N training transitions (a CPU budget; None: all)
    augment: str = "none"  # none | rename: objects renamed at random per draw (data/augment.py)
    loss_on: str = "completion"  # completion | full (every token, as the paper's run_clm)
    batch_size: int = 32
    epochs: int = 15
    optim: OptimConfig = field(default_factory=optim_defaults(2.0e-3, 100))
    val_greedy: int = 128  # validation transitions decoded greedily and judged each epoch
    max_new_tokens: int | None = None  # stored in the export (None: twice the longest completion)
    monitor: Monitor = field(default_factory=Monitor)
    # start from an export and mix extra transitions into the training split
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)


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



def dagger_examples(m: GeneratorConfig, run: RunContext) -> list[tuple[str, str]]:
    """``model.finetune.dagger``'s examples, also written to ``<out_dir>/dagger.jsonl``."""
    if not m.finetune.dagger.rollouts:
        return []
    from plansuite.models.sampling import dagger_pairs

    policy = GeneratorPolicy.from_export(m.finetune.init_from)
    pairs = dagger_pairs(policy, run.data_dir, run.domain, m.finetune.dagger, m.trajectories,
                         run.seed)
    run.out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run.out_dir / "dagger.jsonl",
                 "".join(json.dumps({"prompt": p, "completion": c}) + "\n" for p, c in pairs))
    return pairs


def build_generator(m: GeneratorConfig, run: RunContext) -> Built:
    from plansuite.models.backbone import context_length
    from plansuite.models.datamodules import GeneratorDataModule
    from plansuite.models.export import check_export_domain

    base_max_new, extra_pairs = None, []
    m.finetune.dagger.check()
    if m.finetune.dagger.rollouts and not m.finetune.init_from:
        raise ConfigError("model.finetune.dagger.rollouts: needs model.finetune.init_from=EXPORT "
                          "(the generator whose rollouts are relabelled)")
    if m.finetune.init_from:  # finetuning: the export's weights and tokenizer
        base_max_new = check_export_domain(m.finetune.init_from, "generator", run.domain,
                                           "model.finetune.init_from").get("max_new_tokens")
        tokenizer, model = start_from_export(m.finetune.init_from, "causal")
        extra_pairs = dagger_examples(m, run)
    else:
        tokenizer = make_tokenizer(m.backbone, run.domain, run.data_dir)
        model = make_model(m.backbone, "causal", tokenizer)
    dm = GeneratorDataModule(run.data_dir, tokenizer, context_length(model.config), m.batch_size,
                             m.loss_on, m.val_greedy, num_workers=run.num_workers, seed=run.seed,
                             finetune=m.finetune, trajectories=m.trajectories,
                             train_transitions=m.train_transitions, augment=m.augment,
                             extra_pairs=extra_pairs)
    dm.setup()  # data problems surface now, as one line, before any training
    max_new = m.max_new_tokens or base_max_new or 2 * dm.max_completion
    module = GeneratorModule(model, tokenizer, run.domain, m.optim, max_new, run.record)
    return Built(module, dm, tokenizer, {"kind": "generator", "max_new_tokens": max_new})


KIND = ModelKind(GeneratorConfig, build_generator, object_names=True)
