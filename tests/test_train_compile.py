"""``compile=true``: training steps through torch.compile, everything else eager, weights unchanged."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from plansuite.models.compiled import compile_for_training
from plansuite.nl2pddl.models.problem_generator_module import completion_loss


def tiny_lm(seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,  # train mode, same numbers
                                      bos_token_id=0, eos_token_id=0))


def batch(length: int = 12) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 64, (3, length), generator=torch.Generator().manual_seed(length))
    labels = ids.clone()
    labels[:, : length // 2] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


class CountingCompiler:
    """Stands in for torch.compile: the eager function, counting the calls it serves."""

    def __init__(self, fail: bool = False):
        self.calls, self.fail = 0, fail

    def __call__(self, fn, dynamic: bool):
        assert dynamic  # a new batch length every step must not recompile

        def compiled(*args, **kwargs):
            self.calls += 1
            if self.fail:
                raise torch._dynamo.exc.TorchDynamoException("no C++ compiler found")
            return fn(*args, **kwargs)
        return compiled


def test_only_training_steps_go_through_the_compiled_body():
    model, compiler = tiny_lm(), CountingCompiler()
    compile_for_training(model, compiler)
    model.train()
    completion_loss(model, **batch()).backward()
    assert compiler.calls == 1
    with torch.no_grad():  # a training-mode module without gradients (e.g. a metric) stays eager
        completion_loss(model, **batch())
    model.eval()  # validation and generation: eager, never a recompile
    model.generate(batch()["input_ids"][:1], max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert compiler.calls == 1
    assert set(model.state_dict()) == set(tiny_lm().state_dict())  # checkpoints as an eager run's


def test_a_compiler_that_cannot_run_costs_one_line_and_training_goes_on_eagerly(capsys):
    model, reference, compiler = tiny_lm(), tiny_lm(), CountingCompiler(fail=True)
    compile_for_training(model, compiler)
    model.train()
    reference.train()
    for length in (10, 12):
        assert float(completion_loss(model, **batch(length))) == float(completion_loss(reference, **batch(length)))
    assert compiler.calls == 1  # tried once, then eager
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compile=true" in err[0] and "no C++ compiler found" in err[0]


def test_compile_must_be_a_boolean():
    from plansuite.cli.train import compose_train, train_spec
    from plansuite.errors import ConfigError

    with pytest.raises(ConfigError, match=r"compile='no': choose true or false"):
        train_spec(compose_train(["data_dir=D", "compile=no"]))
    assert train_spec(compose_train(["data_dir=D", "compile=true"])).compile is True


@pytest.mark.slow
def test_torch_compile_trains_as_eager_does():
    """The real compiler (Inductor): same loss and gradients as eager on the same weights, over
    batches of two lengths (dynamic shapes)."""
    model, reference = tiny_lm(), tiny_lm()
    compile_for_training(model)
    for m in (model, reference):
        m.train()
    for length in (10, 14):
        ours, theirs = completion_loss(model, **batch(length)), completion_loss(reference, **batch(length))
        ours.backward()
        theirs.backward()
        assert float(ours) == pytest.approx(float(theirs), rel=1e-5)
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6), name
