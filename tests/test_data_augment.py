"""Object renaming (``model.augment=rename``): renamed transitions stay true transitions."""

from __future__ import annotations

import random

import pytest

from plansuite.data.augment import check_augment, name_pool, rename_transition
from plansuite.data.load import load_transitions
from plansuite.domains import load_builtin
from plansuite.errors import ConfigError
from plansuite.pddl.simulator import TaskCache


@pytest.fixture(scope="module")
def tiny_dataset_of(tmp_path_factory):
    """A small dataset per built-in domain, built on first use."""
    from plansuite.data.builder import DatasetSpec, build_dataset
    from plansuite.domains import builtin_path
    from plansuite.domains.blocksworld import BlocksworldStates
    from plansuite.domains.gripper import GripperStates

    built = {}

    def get(name: str):
        if name not in built:
            sampler = BlocksworldStates(3, 8) if name == "blocksworld" else GripperStates()
            built[name] = tmp_path_factory.mktemp("data") / name
            build_dataset(DatasetSpec(train_states=60, val_states=10, test_instances=5,
                                      val_instances=5, chunk_size=30),
                          load_builtin(name), builtin_path(name).read_text(), sampler,
                          built[name], seed=5, workers=1, progress=lambda _: None)
        return built[name]

    return get


@pytest.mark.parametrize("domain_name", ["blocksworld", "gripper"])
def test_renamed_transitions_are_simulator_true(domain_name, tiny_dataset_of):
    data_dir = tiny_dataset_of(domain_name)
    records = load_transitions(data_dir, "train", limit=300)
    pool = name_pool({n: t for r in records for n, t in r.objects.items()})
    domain, rng = load_builtin(domain_name), random.Random(0)
    tasks = TaskCache(domain)
    changed = 0
    for record in records:
        renamed = rename_transition(record, pool, rng)
        changed += renamed != record
        assert sorted(renamed.objects.values()) == sorted(record.objects.values())  # types kept
        assert list(renamed.state) == sorted(renamed.state)
        init = [tuple(a[1:-1].split()) for a in renamed.state]
        task = tasks.get(renamed.objects, init)
        nxt = task.step(task.encode_atoms(init), renamed.action)
        assert isinstance(nxt, int), (record, renamed)
        assert task.decode(nxt) == list(renamed.next_state)
    assert changed > len(records) // 2


def test_generator_data_draws_a_new_renaming_each_epoch(tiny_dataset_of):
    from plansuite.models.datamodules import GeneratorDataModule
    from plansuite.models.tokenizer import build_atom_tokenizer

    data_dir = tiny_dataset_of("blocksworld")
    objects = {n: t for r in load_transitions(data_dir, "train") for n, t in r.objects.items()}
    tokenizer = build_atom_tokenizer(load_builtin("blocksworld"), objects)
    plain = GeneratorDataModule(data_dir, tokenizer, context=256)
    renamed = GeneratorDataModule(data_dir, tokenizer, context=256, augment="rename")
    plain.setup()
    renamed.setup()
    assert len(renamed.train) == len(plain.train)
    draws = []
    for epoch in range(6):  # a new renaming each epoch; within an epoch, the same on every draw
        renamed.train.set_epoch(epoch)
        draws.append(renamed.train[3])
        assert renamed.train[3] == draws[-1]
    assert any(d != draws[0] for d in draws)
    assert all(len(d[0]) == len(plain.train[3][0]) for d in draws)  # one token per atom
    assert plain.val == renamed.val  # validation is never renamed
    with pytest.raises(ConfigError, match="choose from none, rename"):
        check_augment("shuffle")
