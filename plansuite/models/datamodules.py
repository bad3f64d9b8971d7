"""DataModules: tokenized transitions for the generator, labelled steps for the verifier.

Generator examples are ``prompt + completion + EOS`` with the loss on the completion only
(``loss_on=completion``) or on every token (``full``, what the paper's ``run_clm`` did). The
generator's second validation loader yields indices into ``greedy_records``, a fixed validation
subset that the module decodes greedily and judges with the simulator.

Verifier examples are :class:`~plansuite.data.verifier_recipes.VerifierItem` s: the text the
verifier reads, the training label under the recipe, and the simulator's truth (validation
metrics use the truth only). What each recipe and validation set holds is
:mod:`plansuite.data.verifier_recipes`; this module samples the generator for the ``onpolicy``
recipe and its validation set (cached under ``cache_dir``) and tokenizes.

What the generator trains on (the dataset's transitions, or the finetuning mix with extra
transitions such as verified plans) is :mod:`plansuite.data.generator_recipes`; validation is
always the dataset's val split.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TypeVar

import lightning as L
from torch.utils.data import DataLoader, Dataset

from plansuite.data.augment import check_augment, name_pool, rename_text_blocks, rename_transition
from plansuite.data.generator_recipes import FinetuneConfig, finetune_split, load_extra_transitions
from plansuite.data.judged import pick_records
from plansuite.data.load import (
    TransitionRecord,
    load_instances,
    load_trajectories,
    load_transitions,
)
from plansuite.data.verifier_recipes import (
    OnPolicyConfig,
    VerifierItem,
    check_recipe,
    judged_items,
    training_items,
    val_set_names,
    validation_sets,
)
from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.models.resumable import resumable_loader
from plansuite.models.sampling import sample_and_judge
from plansuite.models.tokenizer import encode, pad_ids
from plansuite.pddl.model import Domain
from plansuite.pddl.simulator import TaskCache

LOSS_ON = ("completion", "full")
T = TypeVar("T")


def dataset_objects(data_dir: str | Path, domain: Domain) -> dict[str, str]:
    """Every object (name -> type) used by the dataset's walks and instances."""
    objects: dict[str, str] = {}
    for split in ("train", "val"):
        for traj in load_trajectories(data_dir, split):
            objects.update(traj["objects"])
    for folder in ("test", "val_instances"):
        path = Path(data_dir) / folder
        if path.is_dir() and any(path.glob("*.pddl")):
            for inst in load_instances(path, domain):
                objects.update(inst.problem.objects)
    return objects


def check_fits(lengths: list[int], context: int, what: str) -> None:
    longest = max(lengths, default=0)
    if longest > context:
        raise ConfigError(f"{what}: {sum(n > context for n in lengths)} sequences are longer than "
                          f"the model's context ({longest} > {context} tokens); raise "
                          "model.backbone.n_positions")


# ---- generator --------------------------------------------------------------------------------
def generator_example(prompt_ids: list[int], completion_ids: list[int], eos_id: int,
                      loss_on: str = "completion") -> tuple[list[int], list[int]]:
    """(input ids, labels) with -100 on the prompt unless ``loss_on == "full"``.

    >>> generator_example([1, 2], [3, 4], eos_id=9)
    ([1, 2, 3, 4, 9], [-100, -100, 3, 4, 9])
    >>> generator_example([1, 2], [3], eos_id=9, loss_on="full")[1]
    [1, 2, 3, 9]
    """
    ids = prompt_ids + completion_ids + [eos_id]
    if loss_on == "full":
        return ids, list(ids)
    return ids, [-100] * len(prompt_ids) + completion_ids + [eos_id]


def collate_causal(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict:
    ids, mask = pad_ids([e[0] for e in examples], pad_id)
    labels, _ = pad_ids([e[1] for e in examples], -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class RenamedPerEpoch(Dataset):
    """Training items renamed afresh each epoch (``model.augment=rename``,
    :mod:`plansuite.data.augment`): ``rename(item, rng=...)`` renames one item, ``encode`` turns a
    list of renamed items into model inputs. An item's renaming is a pure function of (seed, index,
    epoch), so a resumed run, a DataLoader worker and a DDP rank all draw the one the uninterrupted
    run drew; :class:`~plansuite.models.resumable.EpochOrder` sets the epoch."""

    def __init__(self, items: Sequence, rename, encode, seed: int):
        self.items, self.rename, self.encode, self.seed = items, rename, encode, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        # The seed string of the counter it replaces (the i-th item's n-th draw was in epoch n),
        # so single-process runs rename as before.
        rng = random.Random(f"{self.seed}/{i}/{self.epoch}")
        return self.encode([self.rename(self.items[i], rng=rng)])[0]


def rename_verifier_item(item: VerifierItem, types: dict[str, str], pool: dict[str, list[str]],
                         rng: random.Random) -> VerifierItem:
    """A verifier item with its text's objects renamed (labels are invariant under renaming)."""
    return VerifierItem(rename_text_blocks(item.text, types, pool, rng), item.label, item.truth)


class GeneratorDataModule(L.LightningDataModule):
    def __init__(self, data_dir: str | Path, tokenizer, context: int, batch_size: int = 32,
                 loss_on: str = "completion", greedy_n: int = 128, greedy_batch_size: int = 64,
                 num_workers: int = 0, seed: int = 0, finetune: FinetuneConfig | None = None,
                 trajectories: str = "walk", train_transitions: int | None = None,
                 augment: str = "none", extra_pairs: Sequence[tuple[str, str]] = ()):
        super().__init__()
        self.augment = check_augment(augment)  # none | rename: plansuite/data/augment.py
        self.extra_pairs = list(extra_pairs)  # mixed in like finetune.extra's (e.g. relabelled)
        self.trajectories = trajectories  # walk (the paper's) | shortest: data/shortest.py
        if train_transitions is not None and train_transitions < 1:
            raise ConfigError(f"model.train_transitions={train_transitions}: must be >= 1 (or null)")
        self.train_transitions = train_transitions  # the split's first N (a CPU budget)
        if loss_on not in LOSS_ON:
            raise ConfigError(f"model.loss_on '{loss_on}': unknown (choose from {', '.join(LOSS_ON)})")
        self.data_dir, self.tokenizer, self.context = data_dir, tokenizer, context
        self.batch_size, self.loss_on, self.greedy_n = batch_size, loss_on, greedy_n
        self.greedy_batch_size, self.num_workers, self.seed = greedy_batch_size, num_workers, seed
        self.finetune = finetune or FinetuneConfig()
        self.train: list | None = None

    def encode_records(self, records: Sequence[TransitionRecord]) -> list[tuple[list[int], list[int]]]:
        return self.encode_pairs([(r.prompt, r.completion) for r in records])

    def encode_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        prompts = encode(self.tokenizer, [p for p, _ in pairs])
        completions = encode(self.tokenizer, [c for _, c in pairs])
        eos = self.tokenizer.eos_token_id
        return [generator_example(p, c, eos, self.loss_on) for p, c in zip(prompts, completions, strict=True)]

    def setup(self, stage: str | None = None) -> None:
        if self.train is not None:
            return
        train = load_transitions(self.data_dir, "train", self.train_transitions,
                                 trajectories=self.trajectories)
        val = load_transitions(self.data_dir, "val", trajectories=self.trajectories)
        if not train or not val:
            raise ConfigError(f"{self.data_dir}: the train and val splits need transitions")
        self.train, self.val = self.encode_records(train), self.encode_records(val)
        ft = self.finetune
        pairs = (load_extra_transitions(ft.extra) if ft.extra else []) + self.extra_pairs
        if pairs:
            extra = self.encode_pairs(pairs)
            check_fits([len(e[0]) for e in extra], self.context,
                       str(ft.extra or "model.finetune.dagger"))
            self.train, self.train_counts = finetune_split(self.train, extra, ft, self.seed)
        check_fits([len(e[0]) for e in self.train + self.val], self.context, f"{self.data_dir}")
        self.greedy_records = pick_records(val, self.greedy_n, self.seed)
        self.max_completion = max(len(e[1]) - e[1].count(-100) for e in self.train)
        if self.augment == "rename":
            if pairs:
                raise ConfigError("model.augment=rename renames the dataset's transitions; it does "
                                  "not apply to model.finetune's extra examples (use augment=none)")
            objects = {name: typ for r in train for name, typ in r.objects.items()}
            self.train = RenamedPerEpoch(train, partial(rename_transition, pool=name_pool(objects)),
                                         self.encode_records, self.seed)

    def train_dataloader(self) -> DataLoader:
        return resumable_loader(self.train, self.batch_size, self.seed, self._collate,
                                self.num_workers, self.trainer)

    def val_dataloader(self) -> list[DataLoader]:
        loaders = [DataLoader(self.val, batch_size=self.batch_size, collate_fn=self._collate,
                              num_workers=self.num_workers)]
        if self.greedy_records:
            loaders.append(DataLoader(list(range(len(self.greedy_records))),
                                      batch_size=self.greedy_batch_size))
        return loaders

    def _collate(self, examples):
        return collate_causal(examples, self.tokenizer.pad_token_id)


# ---- verifier ---------------------------------------------------------------------------------
def write_items(path: Path, items: list[VerifierItem], params: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps({"params": params}) + "\n")
        f.writelines(json.dumps(asdict(i)) + "\n" for i in items)
    tmp.replace(path)


def read_items(path: Path, params: dict) -> list[VerifierItem] | None:
    """Cached items, or None when missing or made with other parameters."""
    if not path.is_file():
        return None
    rows = iter_jsonl(path)
    if next(rows, {}).get("params") != params:
        return None
    return [VerifierItem(**r) for r in rows]


class VerifierDataModule(L.LightningDataModule):
    def __init__(self, data_dir: str | Path, domain: Domain, tokenizer, context: int, *,
                 recipe: str = "random", input_kind: str = "state_action", batch_size: int = 32,
                 generator_dir: str | None = None, onpolicy: OnPolicyConfig | None = None,
                 cache_dir: str | Path | None = None, num_workers: int = 0, seed: int = 0,
                 progress=print, augment: str = "none"):
        super().__init__()
        self.augment = check_augment(augment)  # none | rename: plansuite/data/augment.py
        check_recipe(recipe, input_kind, generator_dir, (onpolicy or OnPolicyConfig()).base_recipe)
        self.data_dir, self.domain, self.tokenizer, self.context = data_dir, domain, tokenizer, context
        self.recipe, self.input_kind, self.batch_size = recipe, input_kind, batch_size
        self.generator_dir, self.onpolicy = generator_dir, onpolicy or OnPolicyConfig()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.num_workers, self.seed, self.progress = num_workers, seed, progress
        self.train: list | None = None

    # -- on-policy samples (made once, on one process, cached) --
    def _onpolicy_jobs(self) -> dict[str, dict]:
        if not self.generator_dir:
            return {}
        op = self.onpolicy
        common = {"generator": str(Path(self.generator_dir).resolve()), "seed": self.seed,
                  "input_kind": self.input_kind, "temperature": op.temperature, "top_p": op.top_p}
        jobs = {"val": {**common, "prompts": op.val_prompts, "samples": op.val_samples_per_prompt}}
        if self.recipe == "onpolicy":
            jobs["train"] = {**common, "prompts": op.prompts, "samples": op.samples_per_prompt}
        return jobs

    def _cache_path(self, split: str) -> Path:
        return (self.cache_dir or Path(self.data_dir)) / f"onpolicy-{split}.jsonl"

    def prepare_data(self) -> None:
        from plansuite.models.inference import GeneratorPolicy

        policy = None
        tasks = TaskCache(self.domain)
        for split, params in self._onpolicy_jobs().items():
            path = self._cache_path(split)
            if read_items(path, params) is not None:
                continue
            if policy is None:
                device = str(self.trainer.strategy.root_device) if self.trainer else "cpu"
                policy = GeneratorPolicy.from_export(self.generator_dir, device=device)
            records = pick_records(load_transitions(self.data_dir, split), params["prompts"],
                                   self.seed)
            self.progress(f"[train] sampling the generator on {len(records)} {split} transitions "
                          f"x {params['samples']} for on-policy verifier examples")
            judged = sample_and_judge(policy, tasks, records, samples_per_record=params["samples"],
                                      temperature=params["temperature"], top_p=params["top_p"],
                                      seed=self.seed + (split == "val"))
            items = judged_items(judged, self.input_kind)
            bad = sum(1 - i.truth for i in items)
            self.progress(f"[train] on-policy {split}: {len(items)} distinct steps, {bad} invalid, "
                          f"{sum(j.step is None for j in judged)} unparseable samples skipped")
            write_items(path, items, params)

    def setup(self, stage: str | None = None) -> None:
        if self.train is not None:
            return
        tasks = TaskCache(self.domain)
        jobs = self._onpolicy_jobs()
        cached = {}
        for split, params in jobs.items():
            cached[split] = read_items(self._cache_path(split), params)
            if cached[split] is None:
                self.prepare_data()  # used outside a Trainer (tests, tools)
                cached[split] = read_items(self._cache_path(split), params)
        train = training_items(self.data_dir, self.recipe, self.input_kind, tasks,
                               cached.get("train") or [], self.onpolicy.base_recipe,
                               self.onpolicy.base_examples, self.seed)
        self.val_sets = validation_sets(self.data_dir, self.input_kind, tasks, cached.get("val"))
        assert list(self.val_sets) == val_set_names(self.generator_dir)
        self.train = self._encode(train)
        self.val = {name: self._encode(items) for name, items in self.val_sets.items()}
        if self.augment == "rename":
            types = {name: typ for t in load_trajectories(self.data_dir, "train")
                     for name, typ in t["objects"].items()}
            rename = partial(rename_verifier_item, types=types, pool=name_pool(types))
            self.train = RenamedPerEpoch(train, rename, self._encode, self.seed)
        check_fits([len(e[0]) for e in self.train], self.context, str(self.data_dir))
        for name, encoded in self.val.items():
            check_fits([len(e[0]) for e in encoded], self.context, f"verifier val set {name}")
        self.train_counts = {"examples": len(train), "label_1": sum(i.label for i in train),
                             "truth_1": sum(i.truth for i in train)}

    def _encode(self, items: list[VerifierItem]) -> list[tuple[list[int], int, int]]:
        ids = encode(self.tokenizer, [i.text for i in items])
        return [(x, i.label, i.truth) for x, i in zip(ids, items, strict=True)]

    def train_dataloader(self) -> DataLoader:
        return resumable_loader(self.train, self.batch_size, self.seed, self._collate,
                                self.num_workers, self.trainer)

    def val_dataloader(self) -> list[DataLoader]:
        return [DataLoader(v, batch_size=self.batch_size * 2, collate_fn=self._collate,
                           num_workers=self.num_workers) for v in self.val.values()]

    def _collate(self, examples) -> dict:
        import torch

        ids, mask = pad_ids([e[0] for e in examples], self.tokenizer.pad_token_id)
        return {"input_ids": ids, "attention_mask": mask,
                "labels": torch.tensor([e[1] for e in examples]),
                "truth": torch.tensor([e[2] for e in examples])}
