"""The checking side's model of training (properties/models/trainer.py) is one model: its trainable Transformer is
the expected Transformer with autograd on, and its library loss is the by-hand loss of the graded side's mistake model,
mistake by mistake (the identity docs/bundle.md states)."""

from __future__ import annotations

import pytest
import torch

from autograder.diagnoses.smoothed_loss import smoothed_loss
from autograder.properties.models.trainer import TrainingMistake as M
from autograder.properties.models.trainer import expected_smoothed_loss, library_loss
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
