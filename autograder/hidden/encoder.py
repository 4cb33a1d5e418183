"""Hidden properties of encoder.EncoderLayer and encoder.Encoder (graded, never shipped to students)."""

from __future__ import annotations

from dataclasses import replace

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.encoder import (
    explain_layer,
    fixed_layer_case,
    layer_cases,
)
from ..properties.models.layers import STACK_HINTS, StackMistake, torch_layer, torch_stack
from ..suite.checks import close, consistent
from ..suite.clauses import Encoder
from ..suite.core import prop
from ..suite.layers import build_layer, build_stack, run_layer
from ..suite.strategies import masks, randn

C = "encoder"


@prop(C, points=2, examples=2, visible=False, clauses=(Encoder.MASK,))
@given(case=layer_cases(), noise=st.integers(0, 2**16 - 1))
@example(case=fixed_layer_case(batch=2, length=4, d_model=4, num_heads=2, d_ff=8, seed=1), noise=3)
def encoder_stack_mask_reaches_every_layer(student, case, noise):
    """In a 2-layer Encoder, changing the padded positions' inputs leaves the unpadded positions' outputs alone."""
    x, mask = case.x, case.mask
    handle, state = build_stack(student, case, 2)
    out = run_layer(student, handle, case, "Encoder.forward(x, mask)")
    padded = ~mask[:, 0, 0]
    changed = torch.where(padded[..., None], randn(x.shape, noise, x.dtype, 2.0), x)
    out2 = run_layer(student, handle, replace(case, x=changed), "Encoder.forward(x, mask)")
    consistent(
        out2[~padded],
        out[~padded],
        _("Encoder outputs at unpadded positions after changing the padded inputs"),
        STACK_HINTS(StackMistake.NO_MASK, C),
        expected=torch_stack(state, case, 2)[~padded],
        given=x[~padded],
    )


@prop(C, points=1, examples=2, visible=False, clauses=(Encoder.MASK,))
@given(case=layer_cases(mask=False), data=st.data())
def encoder_layer_2d_mask_equals_torch(student, case, data):
    """With a 2-D (m, m) mask (every row allows its own position), EncoderLayer equals torch's layer."""
    m = case.x.shape[1]
    mask = data.draw(masks((m, m), p_fully_masked_row=False)) | torch.eye(m, dtype=torch.bool)
    case = replace(case, mask=mask)
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, case)
    expected = torch_layer(state, case)
    close(
        out,
        expected,
        _("EncoderLayer with an (m, m) mask vs nn.TransformerEncoderLayer"),
        lambda: explain_layer(out, state, case, _("pass the mask to the self-attention as it is")),
    )
