"""Hidden properties of positional_encoding."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.properties.positional_encoding import (
    EMBEDDING_ERROR,
    REGISTER_PE,
    C,
    check_table,
    pe_atol,
    pe_hint,
    table,
    token_hint,
)
from autograder.suite import expected_values
from autograder.suite.checks import close, expect, fail, not_constant, tensor
from autograder.suite.core import NO_HINT, Kind, prop
from autograder.suite.strategies import dtypes, seeds

from ..suite.clauses import PositionalEncoding


@prop(C, points=2, examples=2, visible=False, clauses=(PositionalEncoding.TABLE,))
@given(max_len=st.sampled_from([2000, 5000]), d=st.sampled_from([8, 17, 64]))
def sinusoidal_long_sequences(student, max_len, d):
    """The table stays right for long sequences (max_len up to 5000), within float32 rounding."""
    check_table(student, max_len, d, f"sinusoidal_encoding({max_len}, {d})")


@prop(C, points=2, examples=2, visible=False, clauses=(PositionalEncoding.TABLE,))
@given(half=st.integers(1, 6), k=st.integers(1, 7))
def sinusoidal_rotation_by_a_fixed_offset(student, half, k):
    """PE[p + k] = R_k PE[p]: each pair rotates by the angle k·ω_i, ω_i = 1 / 10000^(2i/d_model)."""
    d, max_len = 2 * half, 40
    pe = table(student, max_len, d).double()
    not_constant(pe, expected_values.sinusoidal(max_len, d), f"sinusoidal_encoding({max_len}, {d})")
    omega = 1.0 / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    sin_p, cos_p = pe[:-k, 0::2], pe[:-k, 1::2]
    # sin(a + kω) = sin a cos kω + cos a sin kω;  cos(a + kω) = cos a cos kω - sin a sin kω
    rotated = torch.stack([sin_p * c + cos_p * s, cos_p * c - sin_p * s], dim=-1).reshape(
        max_len - k, d
    )
    atol = pe_atol(max_len)
    if not torch.allclose(pe[k:], rotated, rtol=0.0, atol=2 * atol):
        p = int((pe[k:] - rotated).abs().amax(-1).argmax())
        fail(
            _("PE[{p_plus_k}] is not PE[{p}] rotated pair by pair by the angles {k}·ω_i").format(
                p_plus_k=p + k, p=p, k=k
            ),
            pe_hint(
                pe,
                max_len,
                d,
                _("pair i is (sin(p·ω_i), cos(p·ω_i)) with ω_i = 1 / 10000^(2i/d_model)"),
            ),
        )


@prop(
    C,
    points=1,
    examples=2,
    visible=False,
    kind=Kind.SHAPE,
    error_hint=NO_HINT,
    clauses=(PositionalEncoding.BUFFER,),
)
@given(d=st.sampled_from([4, 6]))
def positional_encoding_default_max_len(student, d):
    """PositionalEncoding(d_model) defaults to max_len = 5000: pe is (1, 5000, d_model)."""
    info = student.inspect(student.build(C, "PositionalEncoding", d_model=d))
    expect(
        "pe" in info["state"],
        _("PositionalEncoding has no buffer `pe`"),
        _(REGISTER_PE),
    )
    tensor(info["state"]["pe"], "PositionalEncoding(d_model).pe", shape=(1, 5000, d))


@prop(
    C,
    points=1,
    examples=2,
    visible=False,
    error_hint=EMBEDDING_ERROR,
    clauses=(PositionalEncoding.EMBEDDING,),
)
@given(vocab=st.integers(2, 6), d=st.integers(1, 5), seed=seeds(), dtype=dtypes())
def token_embedding_parameters_and_dtype(student, vocab, d, seed, dtype):
    """TokenEmbedding has embedding (nn.Embedding, weight (vocab_size, d_model)); a float64 model gives float64
    values (the dtype itself is the visible token_embedding_scales_by_sqrt_d_model's business)."""
    h = student.build(C, "TokenEmbedding", dtype=dtype, vocab_size=vocab, d_model=d)
    info = student.inspect(h)
    expect(
        info["module_types"].get("embedding") == "Embedding",
        _("TokenEmbedding.embedding is {type}, expected nn.Embedding").format(
            type=info["module_types"].get("embedding", _("missing"))
        ),
        _("self.embedding = nn.Embedding(vocab_size, d_model)"),
    )
    expect(
        "embedding.weight" in info["params"],
        _("embedding.weight is not a parameter"),
        _("self.embedding = nn.Embedding(vocab_size, d_model)"),
    )
    w = tensor(info["state"]["embedding.weight"], "embedding.weight", shape=(vocab, d))
    tokens = torch.tensor([[0, vocab - 1, 0]])
    y = tensor(
        student.method(h, "forward", tokens), "TokenEmbedding(tokens)", shape=(1, 3, d), dtype=dtype
    )
    rows = w[tokens].double()
    close(
        y,
        rows * math.sqrt(d),
        "TokenEmbedding(tokens)",
        lambda: token_hint(
            y,
            rows,
            d,
            vocab,
            dtype,
            _("out = self.embedding(tokens) * math.sqrt(d_model), in the model's dtype"),
        ),
        dtype=dtype,
    )
