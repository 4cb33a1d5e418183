"""The checking side's model of training (properties/models/trainer.py) is one model: its trainable Transformer is
the expected Transformer with autograd on, its library loss is the by-hand loss of the graded side's mistake model,
mistake by mistake (the identity docs/bundle.md states), and its Adam formula is torch's Adam on the schedule."""

from __future__ import annotations

import pytest
import torch

from autograder.properties.models.trainer import (
    BETAS,
    EPS,
    AdamMoments,
    adam_update,
    expected_smoothed_loss,
    library_loss,
    rate,
    smoothed_loss,
)
from autograder.properties.models.trainer import TrainingMistake as M
from autograder.properties.models.transformer import (
    ExpectedTransformer,
    TrainableTransformer,
    TransformerConfig,
)
from autograder.suite.expected_values import expected_causal_mask
from autograder.suite.training_cases import fixed_loss_inputs


def test_the_trainable_transformer_is_the_expected_one_with_autograd():
    config = TransformerConfig(7, 6, 8, 2, 2, seed=4, max_len=16)
    state = config.state()
    src, tgt = torch.tensor([[3, 4, 5, 0]]), torch.tensor([[1, 5, 4]])
    args = (src, tgt, (src != 0)[:, None, None, :], expected_causal_mask(3))
    trainable = TrainableTransformer(state, config)
    got = trainable(*args)
    torch.testing.assert_close(got.detach(), ExpectedTransformer(state, config).forward(*args))
    got.sum().backward()
    # every weight is a parameter of its own, named as the kit names it (the positional encoding is a buffer)
    assert trainable.kit().keys() == state.keys() - {"positional_encoding.pe"}
    assert all(torch.equal(v, state[k]) for k, v in trainable.kit().items())
    assert all(g is not None for g in trainable.kit(lambda p: p.grad).values())


@pytest.mark.parametrize("mistake", [M.NONE, M.PAD_MASS, M.SUMMED, M.TORCH_SMOOTHING])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.4])
def test_the_library_loss_is_the_graded_sides_mistake_by_mistake(mistake, smoothing):
    inputs = fixed_loss_inputs(7, smoothing=smoothing, pad_id=2)
    args = (inputs.logits, inputs.target, smoothing, inputs.pad_id)
    torch.testing.assert_close(
        library_loss(*args, mistake), smoothed_loss(*args, mistake), rtol=1e-10, atol=1e-12
    )


def test_padding_counted_has_no_library_form_and_is_the_graded_sides():
    inputs = fixed_loss_inputs(8)
    args = (inputs.logits, inputs.target, inputs.smoothing, inputs.pad_id)
    with pytest.raises(AssertionError):
        library_loss(*args, M.PAD_COUNTED)
    counted = expected_smoothed_loss(*args, M.PAD_COUNTED)
    assert torch.equal(counted, smoothed_loss(*args, M.PAD_COUNTED))
    assert not torch.allclose(counted, library_loss(*args))  # the second row ends in padding


@pytest.mark.parametrize("mistake", [M.NONE, M.NO_ZERO_GRAD, M.SCHEDULE_AHEAD, M.SCHEDULE_BEHIND])
def test_adams_formula_is_torchs_adam_on_the_schedule(mistake):
    """adam_update at `rate` step after step is torch.optim.Adam(betas, eps) under LambdaLR (right, without
    zero_grad, or with the scheduler a step off): train's property checks the student's train against this
    formula on the student's own gradients, so it must be the paper's optimizer itself."""
    g = torch.Generator().manual_seed(0)
    shapes = {"a": (3, 4), "b": (5,)}
    w = {n: torch.randn(shape, generator=g, dtype=torch.float64) for n, shape in shapes.items()}
    params = {n: torch.nn.Parameter(v.clone()) for n, v in w.items()}
    adam = torch.optim.Adam(params.values(), lr=1.0, betas=BETAS, eps=EPS)
    scheduler = torch.optim.lr_scheduler.LambdaLR(adam, lambda e: rate(e + 1, 8, 2, 1.0, mistake))
    state, moments, summed = dict(w), AdamMoments(), {n: 0.0 for n in w}
    for s in range(1, 5):
        grads = {
            n: torch.randn(shape, generator=g, dtype=torch.float64) for n, shape in shapes.items()
        }
        if M.NO_ZERO_GRAD not in mistake:
            adam.zero_grad()
        for n, p in params.items():
            p.grad = grads[n].clone() if p.grad is None else p.grad + grads[n]
        summed = {n: summed[n] + grads[n] for n in grads}
        adam.step()
        scheduler.step()
        state = adam_update(
            state,
            summed if M.NO_ZERO_GRAD in mistake else grads,
            moments,
            rate(s, 8, 2, 1.0, mistake),
        )
        for n, p in params.items():
            torch.testing.assert_close(state[n], p.detach(), rtol=1e-12, atol=1e-14)
