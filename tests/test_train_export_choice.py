"""Which weights a run exports when its step budget ends mid-epoch (after its last validation)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from plansuite.training import final_if_better


class FakeTrainer:
    def __init__(self, global_step: int, final_loss: float):
        self.global_step, self.fast_dev_run, self.final_loss = global_step, False, final_loss
        self.validated = 0

    def validate(self, module, datamodule, verbose):
        self.validated += 1
        return [{"val/loss": self.final_loss}]


def _setup(tmp_path, best_step: int, best_loss: float):
    best, last = tmp_path / "best.ckpt", tmp_path / "last.ckpt"
    torch.save({"global_step": best_step}, best)
    torch.save({"global_step": 8000}, last)
    cb = SimpleNamespace(best_model_path=str(best), best_model_score=torch.tensor(best_loss),
                         monitor="val/loss", mode="min")
    return cb, best, last


def test_unvalidated_final_weights_are_exported_when_they_validate_better(tmp_path):
    cb, best, last = _setup(tmp_path, 4127, 0.06)
    trainer = FakeTrainer(8000, final_loss=0.01)
    assert final_if_better(trainer, None, None, cb, last) == (str(last), [{"val/loss": 0.01}])
    assert trainer.validated == 1  # those metrics are reused for the export, not measured again


def test_the_best_checkpoint_stays_when_the_final_weights_are_worse_or_were_validated(tmp_path):
    cb, best, last = _setup(tmp_path, 4127, 0.06)
    assert final_if_better(FakeTrainer(8000, final_loss=0.2), None, None, cb, last) == (str(best), None)
    cb, best, last = _setup(tmp_path, 8000, 0.06)  # the budget ended on a validation
    trainer = FakeTrainer(8000, final_loss=0.01)
    assert final_if_better(trainer, None, None, cb, last) == (str(best), None) and trainer.validated == 0


def test_final_weights_validated_on_an_epoch_boundary_are_not_validated_again(tmp_path):
    """The budget ended on an epoch's validation that was not the best: the final weights were
    measured already (and lost), so no second validation runs."""
    cb, best, last = _setup(tmp_path, 4127, 0.06)
    trainer = FakeTrainer(8000, final_loss=0.01)
    assert final_if_better(trainer, None, None, cb, last, validated_step=8000) == (str(best), None)
    assert trainer.validated == 0
    assert final_if_better(trainer, None, None, cb, last, validated_step=6000)[0] == str(last)


def test_the_latest_validation_step_survives_a_resume():
    from plansuite.models.callbacks import LastValidation

    cb = LastValidation()
    cb.on_validation_end(SimpleNamespace(sanity_checking=True, global_step=0), None)
    assert cb.step == -1  # a sanity check validates nothing trained
    cb.on_validation_end(SimpleNamespace(sanity_checking=False, global_step=500), None)
    resumed = LastValidation()
    resumed.load_state_dict(cb.state_dict())
    assert resumed.step == 500
