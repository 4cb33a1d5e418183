"""Hidden properties of mask.causal_mask and mask.padding_mask."""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.properties.mask import (
    C,
    causal_hint,
    causal_mask,
    padded_tokens,
    padding_hint,
    padding_mask,
)
from autograder.suite import expected_values
from autograder.suite.checks import expect, fail
from autograder.suite.core import prop
from autograder.suite.expected_values import expected_causal_mask
from autograder.suite.strategies import PaddedTokens, dtypes, randn, seeds

from ..suite.clauses import Mask


@prop(
    C,
    points=3,
    examples=4,
    visible=False,
    clauses=(
        Mask.CAUSAL,
        Mask.PADDING,
    ),
)
@given(
    inputs=padded_tokens(max_batch=2, max_seq=5),
    cut=st.integers(0, 4),
    seed=seeds(),
    dtype=dtypes(),
)
@example(
    inputs=PaddedTokens(tokens=torch.tensor([[4, 2, 1, 0, 0], [3, 0, 0, 0, 0]]), pad_id=0),
    cut=2,
    seed=0,
    dtype=torch.float64,
)
def causal_and_padding_masks_combine(student, inputs, cut, seed, dtype):
    """causal_mask(s) & padding_mask(tokens) broadcasts to (batch, 1, s, s): j <= i and token j is real."""
    tokens, pad_id = inputs.tokens, inputs.pad_id
    b, s = tokens.shape
    cut = min(cut, s - 1)
    c, p = causal_mask(student, s), padding_mask(student, tokens, pad_id)
    combined = c & p
    expected = expected_causal_mask(s)[None, None] & (tokens != pad_id)[:, None, None, :]
    if tuple(combined.shape) != (b, 1, s, s) or not torch.equal(combined, expected):
        fail(
            _(
                "{combined} is wrong: it should allow key j for query i exactly when j <= i and token j "
                "is not padding"
            ).format(combined=f"causal_mask({s}) & padding_mask(tokens)"),
            causal_hint(
                c,
                s,
                padding_hint(
                    p,
                    tokens,
                    pad_id,
                    _(
                        "the two masks must combine by broadcasting: "
                        "(s, s) & (batch, 1, 1, s) -> (batch, 1, s, s)"
                    ),
                ),
            ),
        )
    # In the checking side's self-attention: real queries up to `cut` ignore the future and the padding.
    x = randn((b, 2, s, 3), seed, dtype)
    hidden = (torch.arange(s) > cut)[None, :] | (tokens == pad_id)  # (b, s)
    x2 = torch.where(hidden[:, None, :, None], randn(x.shape, seed + 1, dtype, 4.0), x)
    out, out2 = (
        expected_values.attention(x, x, x, combined)[0],
        expected_values.attention(x2, x2, x2, combined)[0],
    )
    keep = ~hidden[:, None, :, None].expand(out.shape)
    expect(
        torch.allclose(out[keep], out2[keep], rtol=1e-5, atol=1e-6),
        _(
            "with the combined mask, a real query at or before t depends on a future or padding token"
        ),
        _("combine with & (logical and): a key may be attended only if both masks allow it"),
    )


@prop(C, points=1, examples=2, visible=False, clauses=(Mask.CAUSAL,))
@given(size=st.sampled_from([16, 33, 64]))
def causal_mask_large_sizes(student, size):
    """causal_mask works for longer sequences: size (size + 1) / 2 allowed pairs, the lower triangle."""
    m = causal_mask(student, size)
    if not torch.equal(m, expected_causal_mask(size)):
        fail(
            _("{mask} is not the lower triangle ({got} True entries, expected {expected})").format(
                mask=f"causal_mask({size})", got=int(m.sum()), expected=size * (size + 1) // 2
            ),
            causal_hint(m, size, _("mask[i, j] = (j <= i) for every size")),
        )


@prop(C, points=1, examples=3, visible=False, clauses=(Mask.PADDING,))
@given(b=st.integers(1, 3), s=st.integers(1, 4), case=st.sampled_from(["none", "all", "absent"]))
def padding_mask_edge_cases(student, b, s, case):
    """No padding gives all True, all padding all False, a pad_id that never occurs all True."""
    pad_id = {"none": 0, "all": 2, "absent": -1}[case]
    tokens = (
        torch.full((b, s), 2, dtype=torch.long)
        if case == "all"
        else torch.arange(1, b * s + 1).reshape(b, s)
    )
    m = padding_mask(student, tokens, pad_id)
    expected = (tokens != pad_id)[:, None, None, :]
    if not torch.equal(m, expected):
        fail(
            _("{call} is wrong: expected all {value}").format(
                call=f"padding_mask(tokens={tokens.tolist()}, pad_id={pad_id})",
                value=bool(expected.all()),
            ),
            padding_hint(m, tokens, pad_id, _("mask = (tokens != pad_id), for any pad_id")),
        )
