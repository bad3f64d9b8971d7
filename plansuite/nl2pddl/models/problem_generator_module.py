"""The problem generator: a causal LM that completes ``DESCRIPTION: ... PROBLEM:`` with a problem.

Training is the transition generator's (:class:`~plansuite.models.generator.GeneratorModule`:
loss on the completion, AdamW with warm-up); only validation differs. Besides the token loss it
decodes a fixed subset of validation pairs greedily and scores the problems against their
references offline (:func:`plansuite.nl2pddl.judging.equivalence.compare`): ``val/parse``,
``val/structural`` and ``val/semantic`` rates. These are progress indicators; the experiment's
numbers come from ``plansuite-nl2pddl task=repair``.

The model kind ``problem_generator`` (:mod:`plansuite.models.kinds`): :class:`ProblemGeneratorConfig`
is ``model=problem_generator``'s settings and :func:`build_problem_generator` builds the module,
its data and its tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torchmetrics import MeanMetric

from plansuite.models.backbone import BackboneConfig
from plansuite.models.factories import make_model, optim_defaults
from plansuite.models.generator import GeneratorModule
from plansuite.models.inference import GeneratorPolicy
from plansuite.models.kinds import Built, ModelKind, Monitor, RunContext
from plansuite.models.optim import OptimConfig
from plansuite.nl2pddl.decoding.generators import extract_problem
from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.pddl.parse import parse_problem

VAL_FLAGS = ("parse", "structural", "semantic")


def text_backbone() -> BackboneConfig:
    """The tiny GPT-2 for text: a BPE trained on the dataset (``conf/model/backbone/tiny_text.yaml``)."""
    return BackboneConfig(tokenizer="corpus", n_positions=512)


@dataclass
class ProblemGeneratorConfig:
    """``model=problem_generator``: NL -> PDDL, description to ``problem.pddl``."""

    kind: str = "problem_generator"
    backbone: BackboneConfig = field(default_factory=text_backbone)
    vocab_size: int = 2048  # corpus tokenizer size (model.backbone.tokenizer=corpus)
    loss_on: str = "completion"
    batch_size: int = 16
    epochs: int = 6
    optim: OptimConfig = field(default_factory=optim_defaults(2.0e-3, 100))
    val_greedy: int = 16  # validation pairs decoded greedily and scored against their references
    max_new_tokens: int | None = None  # stored in the export (None: twice the longest problem)
    # times each abstract training pair is seen per epoch (they are a few dozen scenes among
    # thousands of explicit problems)
    abstract_repeat: int = 1
    monitor: Monitor = field(default_factory=Monitor)


def completion_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    labels: torch.Tensor) -> torch.Tensor:
    """The causal LM's mean cross-entropy over the labelled (completion) tokens -- the loss
    ``model(..., labels=labels).loss`` computes -- with the output layer applied to those
    positions only. The description is about half of a pair's tokens, and a GPT-2 computes
    vocabulary logits for every position: a fifth of a tiny model's forward pass spent on
    predictions no loss reads."""
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    targets = labels[:, 1:]  # position i predicts token i + 1
    read = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][read])
    return torch.nn.functional.cross_entropy(logits.float(), targets[read])


class ProblemGeneratorModule(GeneratorModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.val_greedy = torch.nn.ModuleDict({flag: MeanMetric() for flag in VAL_FLAGS})

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = completion_loss(self.model, batch["input_ids"], batch["attention_mask"], batch["labels"])
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if dataloader_idx == 0:
            return super().validation_step(batch, batch_idx, dataloader_idx)
        pairs = [self.trainer.datamodule.greedy_records[i] for i in batch.tolist()]
        policy = GeneratorPolicy(self.model, self.tokenizer, self.max_new_tokens)
        texts = [g.text for g in policy.generate([p.prompt for p in pairs], temperature=0)]
        for pair, text in zip(pairs, texts, strict=True):
            reference = parse_problem(pair.problem, self.domain, source=pair.id)
            result = compare(reference, extract_problem(text), self.domain, f"{pair.id} (generated)")
            for flag in VAL_FLAGS:
                self.val_greedy[flag].update(float(getattr(result, flag) is True))



def build_problem_generator(m: ProblemGeneratorConfig, run: RunContext) -> Built:
    from plansuite.models.backbone import context_length
    from plansuite.nl2pddl.data.dataset import load_nl2pddl_manifest
    from plansuite.nl2pddl.models.text_datamodules import ProblemDataModule, make_text_tokenizer

    load_nl2pddl_manifest(run.data_dir)
    tokenizer = make_text_tokenizer(m.backbone, m.vocab_size, run.data_dir, m.kind, run.domain)
    model = make_model(m.backbone, "causal", tokenizer)
    dm = ProblemDataModule(run.data_dir, tokenizer, context_length(model.config), m.batch_size,
                           m.loss_on, m.val_greedy, num_workers=run.num_workers, seed=run.seed,
                           abstract_repeat=m.abstract_repeat)
    dm.setup()  # data problems surface now, as one line, before any training
    max_new = m.max_new_tokens or 2 * dm.max_completion
    module = ProblemGeneratorModule(model, tokenizer, run.domain, m.optim, max_new, run.record)
    return Built(module, dm, tokenizer, {"kind": m.kind, "max_new_tokens": max_new})


KIND = ModelKind(ProblemGeneratorConfig, build_problem_generator)
