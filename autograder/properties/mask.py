"""Properties of mask.causal_mask and mask.padding_mask (visible to students).

The masks are the student's; whenever a mask is used in attention, the attention is the checking
side's (expected_values.attention), so a failure here is always about the mask.
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..suite import expected_values
from ..suite.checks import EXPECTED_DTYPE, diagnose, expect, fail, tensor, wrong_shape
from ..suite.clauses import Mask
from ..suite.core import Kind, prop
from ..suite.expected_values import expected_causal_mask
from ..suite.strategies import PaddedTokens, composite, dtypes, randn, seeds

C = "mask"


# ------------------------------------------------------------------------------------------- local helpers
def as_bool(m, what, strict, hint):
    """A bool mask. strict: the shape-and-dtype property, which alone fails another dtype; elsewhere a 0/1 mask
    of another dtype is read as bool (one slip, one deduction) and anything else fails."""
    if m.dtype == torch.bool:
        return m
    if strict or not bool(((m == 0) | (m == 1)).all()):
        fail(_(EXPECTED_DTYPE).format(what=what, expected="torch.bool", got=m.dtype), hint)
    return m != 0


def causal_mask(student, size, strict=False, **kwargs):
    m = tensor(
        student.call(C, "causal_mask", size, **kwargs), f"causal_mask({size})", shape=(size, size)
    )
    return as_bool(
        m,
        f"causal_mask({size})",
        strict,
        _("return a bool mask (True = may attend): not a float 0/1 or 0/-inf mask"),
    )


def causal_hint(m, size, default):
    """Name the causal-mask mistake that explains m, if one does."""
    ones = torch.ones(size, size, dtype=torch.bool)
    if m.dtype != torch.bool or tuple(m.shape) != (size, size) or torch.equal(m, ones.tril()):
        return default
    return diagnose(
        default,
        (
            torch.equal(m, ones.tril(-1)),
            _(
                "the diagonal is excluded: position i must see itself, True on and below the diagonal "
                "(torch.tril with diagonal=0), not strictly below"
            ),
        ),
        (
            torch.equal(m, ones.triu(1)),
            _("inverted polarity: True must mean may attend (j <= i), not blocked"),
        ),
        (
            torch.equal(m, ones.triu()),
            _(
                "upper triangle: True must be on and below the diagonal (j <= i, tril), not above it "
                "(triu)"
            ),
        ),
        (
            torch.equal(m, ~ones.triu()),
            _("inverted polarity and the diagonal excluded: True = may attend, j <= i"),
        ),
        (
            bool(m.all()),
            _("everything is allowed: the future must be blocked above the diagonal"),
        ),
    )


def padding_mask(student, tokens, pad_id, strict=False):
    b, s = tokens.shape
    m = student.call(C, "padding_mask", tokens, pad_id)
    if isinstance(m, torch.Tensor) and tuple(m.shape) in ((b, s), (b, 1, s)):
        wrong_shape(
            "padding_mask",
            (b, 1, 1, s),
            tuple(m.shape),
            _(
                "add the broadcast dims for heads and queries: (batch, 1, 1, seq), e.g. "
                "mask[:, None, None, :]"
            ),
        )
    if isinstance(m, torch.Tensor) and tuple(m.shape) in ((b, 1, s, 1), (b, s, 1, 1)) and s > 1:
        wrong_shape(
            "padding_mask",
            (b, 1, 1, s),
            tuple(m.shape),
            _(
                "the mask blocks padded keys, so seq must be the last dim (the keys' dim): "
                "(batch, 1, 1, seq)"
            ),
        )
    m = tensor(m, "padding_mask", shape=(b, 1, 1, s))
    return as_bool(
        m,
        "padding_mask",
        strict,
        _("return the bool comparison tokens != pad_id (True = real token, may attend)"),
    )


def padding_hint(m, tokens, pad_id, default):
    if (
        m.dtype != torch.bool
        or m.numel() != tokens.numel()
        or torch.equal(m.reshape(tokens.shape), tokens != pad_id)
    ):
        return default
    got = m.reshape(tokens.shape)
    return diagnose(
        default,
        (
            pad_id != 0 and torch.equal(got, tokens != 0),
            _("ignores the pad_id argument: compares with 0"),
        ),
        (
            torch.equal(got, tokens == pad_id),
            _(
                "inverted mask: True must mark the real tokens (tokens != pad_id), False the padding"
            ),
        ),
        (bool(got.all()), _("nothing is masked: compare the tokens with pad_id")),
    )


@composite
def padded_tokens(draw, max_batch=3, max_seq=5):
    """(tokens, pad_id): token ids in 0..4 with pad_id among them, some rows padded at the end."""
    b, s = draw(st.integers(1, max_batch)), draw(st.integers(1, max_seq))
    pad_id = draw(st.integers(0, 4))
    ids = draw(
        st.lists(st.lists(st.integers(0, 4), min_size=s, max_size=s), min_size=b, max_size=b)
    )
    tokens = torch.tensor(ids, dtype=torch.long)
    if draw(st.booleans()):  # right padding, the usual layout
        for row in range(b):
            n = draw(st.integers(0, s))
            tokens[row, n:] = pad_id
    return PaddedTokens(tokens=tokens, pad_id=pad_id)


# --------------------------------------------------------------------------------------------- causal mask
@prop(C, points=1, examples=3, kind=Kind.SHAPE, clauses=(Mask.CAUSAL,))
@given(size=st.integers(1, 6))
def causal_mask_shape_and_dtype(student, size):
    """causal_mask(size) is a bool tensor of shape (size, size)."""
    causal_mask(student, size, strict=True)


@prop(C, points=3, examples=3, clauses=(Mask.CAUSAL,))
@given(size=st.integers(1, 7))
@example(size=3)
def causal_mask_is_lower_triangular(student, size):
    """mask[i, j] is True exactly when j <= i: on and below the diagonal."""
    got = causal_mask(student, size)
    expected = expected_causal_mask(size)
    if not torch.equal(got, expected):
        bad = torch.nonzero(got != expected)[0].tolist()
        i, j = bad
        fail(
            _(
                "{entry} is {got}, expected {expected} (position {i} may see {j} exactly when "
                "{j} <= {i})"
            ).format(
                entry=f"causal_mask({size})[{i}, {j}]",
                got=bool(got[i, j]),
                expected=bool(expected[i, j]),
                i=i,
                j=j,
            ),
            causal_hint(got, size, _("mask[i, j] = (j <= i): torch.tril of a bool matrix of ones")),
        )


@prop(
    C,
    points=1,
    examples=2,
    error_hint=N_(
        "accept a device argument, causal_mask(size, device=None), and pass it "
        "to the tensor you create (device=device)"
    ),
    kind=Kind.SHAPE,
    clauses=(Mask.CAUSAL,),
)
@given(size=st.integers(1, 4), device=st.sampled_from(["cpu", torch.device("cpu"), None]))
def causal_mask_accepts_device(student, size, device):
    """causal_mask(size, device=...) accepts a device and returns the mask on it."""
    m = causal_mask(student, size, device=device)
    expect(
        m.device == torch.device("cpu"),
        _("{call} is on {device}").format(
            call=f"causal_mask(..., device={device!r})", device=m.device
        ),
        _("create the mask with device=device"),
    )


@prop(C, points=3, examples=4, clauses=(Mask.CAUSAL,))
@given(
    n=st.integers(2, 5), cut=st.integers(0, 4), d=st.integers(1, 3), seed=seeds(), dtype=dtypes()
)
def causal_mask_blocks_the_future(student, n, cut, d, seed, dtype):
    """With the student's causal mask in (expected) self-attention, outputs up to t never depend on inputs after t."""
    cut = min(cut, n - 2)
    m = causal_mask(student, n)
    expect(
        bool(m.diagonal().all()),
        _("your {mask} blocks position i from itself").format(mask=f"causal_mask({n})"),
        causal_hint(m, n, _("position i may always attend to itself: mask[i, i] is True")),
    )
    x = randn((2, n, d), seed, dtype)
    x2 = x.clone()
    x2[:, cut + 1 :] = randn((2, n - cut - 1, d), seed + 1, dtype, 3.0)
    out = expected_values.attention(x, x, x, m)[0]
    out2 = expected_values.attention(x2, x2, x2, m)[0]
    if not torch.allclose(out[:, : cut + 1], out2[:, : cut + 1], rtol=1e-5, atol=1e-6):
        fail(
            _(
                "with your {mask}, the attention output at positions <= {cut} changed when only "
                "positions > {cut} changed: the future leaks"
            ).format(mask=f"causal_mask({n})", cut=cut),
            causal_hint(m, n, _("block j > i: mask[i, j] = (j <= i)")),
        )


# -------------------------------------------------------------------------------------------- padding mask
@prop(C, points=1, examples=3, kind=Kind.SHAPE, clauses=(Mask.PADDING,))
@given(inputs=padded_tokens())
def padding_mask_shape_and_dtype(student, inputs):
    """padding_mask(tokens, pad_id) is a bool tensor of shape (batch, 1, 1, seq)."""
    padding_mask(student, inputs.tokens, inputs.pad_id, strict=True)


@prop(C, points=2, examples=5, clauses=(Mask.PADDING,))
@given(inputs=padded_tokens())
@example(inputs=PaddedTokens(tokens=torch.tensor([[5, 6, 7, 3, 3], [3, 1, 0, 2, 3]]), pad_id=3))
@example(inputs=PaddedTokens(tokens=torch.tensor([[1, 2, 0, 0], [0, 0, 0, 0]]), pad_id=0))
def padding_mask_marks_real_tokens(student, inputs):
    """mask[b, 0, 0, j] is True exactly where tokens[b, j] != pad_id."""
    tokens, pad_id = inputs.tokens, inputs.pad_id
    m = padding_mask(student, tokens, pad_id)
    expected = (tokens != pad_id)[:, None, None, :]
    if not torch.equal(m, expected):
        bad = torch.nonzero(m != expected)[0].tolist()
        fail(
            _("{entry} is {got} for token {token}, expected {expected}").format(
                entry=f"padding_mask(tokens, pad_id={pad_id})[{bad[0]}, 0, 0, {bad[3]}]",
                got=bool(m[tuple(bad)]),
                token=int(tokens[bad[0], bad[3]]),
                expected=bool(expected[tuple(bad)]),
            ),
            padding_hint(
                m, tokens, pad_id, _("mask = (tokens != pad_id), reshaped to (batch, 1, 1, seq)")
            ),
        )


@prop(C, points=2, examples=4, clauses=(Mask.PADDING,))
@given(
    inputs=padded_tokens(max_batch=2, max_seq=4),
    heads=st.integers(1, 2),
    m_q=st.integers(1, 3),
    seed=seeds(),
    dtype=dtypes(),
)
def padding_mask_hides_padded_keys(student, inputs, heads, m_q, seed, dtype):
    """With the student's padding mask in (expected) attention, changing the padded keys and values changes nothing."""
    tokens, pad_id = inputs.tokens, inputs.pad_id
    b, s = tokens.shape
    m = padding_mask(student, tokens, pad_id)
    real = tokens != pad_id
    expect(
        bool((m.reshape(b, s) | ~real).all()) or not bool(real.any()),
        _("your padding mask blocks a real token (tokens != pad_id)"),
        padding_hint(
            m, tokens, pad_id, _("True where tokens != pad_id: real tokens may be attended to")
        ),
    )
    q = randn((b, heads, m_q, 3), seed, dtype)
    k, v = randn((b, heads, s, 3), seed + 1, dtype), randn((b, heads, s, 2), seed + 2, dtype)
    pad = (tokens == pad_id)[:, None, :, None]  # (b, 1, s, 1)
    k2 = torch.where(pad, randn(k.shape, seed + 3, dtype, 5.0), k)
    v2 = torch.where(pad, randn(v.shape, seed + 4, dtype, 5.0), v)
    out, out2 = expected_values.attention(q, k, v, m)[0], expected_values.attention(q, k2, v2, m)[0]
    if not torch.allclose(out, out2, rtol=1e-5, atol=1e-6):
        fail(
            _(
                "with your padding mask, changing the keys/values at padding positions changed the "
                "attention output"
            ),
            padding_hint(
                m,
                tokens,
                pad_id,
                _("True where tokens != pad_id: the padding keys must be blocked"),
            ),
        )
