"""Properties of positional_encoding: sinusoidal_encoding, PositionalEncoding and TokenEmbedding (visible).

The closed form is computed in float64 here (expected_values.sinusoidal). A float32 implementation is correct, and its
rounding grows with the position (the angle p·ω is rounded before sin/cos): the tolerance grows with max_len.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call, StudentError
from ..suite import expected_values
from ..suite.checks import close, diagnose, expect, fail, is_close, not_constant, tensor
from ..suite.clauses import PositionalEncoding
from ..suite.core import NO_HINT, Kind, default_hint, prop
from ..suite.strategies import dtypes, randn, seeds
from .models.positional_encoding import PE_HINTS, PeMistake, sinusoid_model

C = "positional_encoding"
TABLE_ERROR = N_(
    "sinusoidal_encoding(max_len, d_model) raised: build angle = position (max_len, 1) / "
    "10000^(2i/d_model) (ceil(d_model/2) columns); with an odd d_model the cos columns are one fewer"
)
default_hint(C, TABLE_ERROR)
EMBEDDING_ERROR = N_(
    "TokenEmbedding needs embedding = nn.Embedding(vocab_size, d_model); forward takes token ids"
)
ODD_HINT = N_(
    "odd d_model: there is one more sin column than cos columns; the cos columns take only the first "
    "d_model // 2 angles"
)


# ------------------------------------------------------------------------------------------- local helpers
def pe_atol(max_len: int) -> float:
    """float32 rounding of the angle p·ω: about 1e-7 per unit of position (4e-4 at 5000 for d_model = 512)."""
    return 1e-5 + 2e-7 * max_len


def table(student, max_len, d, shape_only=False):
    """The student's sinusoidal_encoding(max_len, d), checked for shape (and NaN, unless shape_only)."""
    return tensor(
        student.call(C, "sinusoidal_encoding", max_len, d),
        f"sinusoidal_encoding({max_len}, {d})",
        shape=(max_len, d),
        shape_only=shape_only,
    )


def pe_hint(pe, max_len, d, default):
    """Name the sinusoidal mistake that explains the table pe, if one does."""
    pe = pe.double()
    atol = pe_atol(max_len)
    same = lambda m: is_close(pe, sinusoid_model(max_len, d, m), rtol=0.0, atol=atol)  # noqa: E731
    return diagnose(
        default,
        *PE_HINTS.candidates(same),  # every sinusoid slip, in the order declared
        (
            lambda: d > 1 and is_close(pe.T, sinusoid_model(d, max_len), rtol=0.0, atol=atol),
            _("transposed: the table is (max_len, d_model), positions along dim 0"),
        ),
        (
            lambda: d > 2 and is_close(pe, halves(sinusoid_model(max_len, d)), rtol=0.0, atol=atol),
            _(HALVES),
        ),
    )


HALVES = N_(
    "your table holds every sine in its first half and every cosine in its second ([sin | cos]): the formula "
    "interleaves them, the sine of pair i in column 2i and its cosine in column 2i+1"
)


def halves(pe):
    """The right table's columns rearranged: the even ones (sines) first, then the odd ones (cosines)."""
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=-1)


def check_table(student, max_len, d, what=None):
    pe = table(student, max_len, d)
    expected = expected_values.sinusoidal(max_len, d)
    atol = pe_atol(max_len)
    close(
        pe,
        expected,
        what or f"sinusoidal_encoding({max_len}, {d})",
        lambda: pe_hint(
            pe,
            max_len,
            d,
            _("PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(same angle)"),
        ),
        rtol=0.0,
        atol=atol,
    )
    return pe


# ------------------------------------------------------------------------------------- sinusoidal_encoding
@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(PositionalEncoding.TABLE,))
@given(max_len=st.integers(1, 8), d=st.integers(1, 8))
def sinusoidal_shape_and_default_dtype(student, max_len, d):
    """sinusoidal_encoding(max_len, d_model) is (max_len, d_model) in torch.get_default_dtype()."""
    pe = table(student, max_len, d, shape_only=True)
    expect(
        pe.dtype == torch.get_default_dtype(),
        _("sinusoidal_encoding returned {dtype}, expected the default dtype {default}").format(
            dtype=pe.dtype, default=torch.get_default_dtype()
        ),
        _(
            "return the default float dtype (torch.get_default_dtype()): compute in float64 if you "
            "like, then .to(torch.get_default_dtype())"
        ),
    )


@prop(C, points=1, examples=2, clauses=(PositionalEncoding.TABLE,))
@given(d=st.integers(1, 9))
def sinusoidal_first_row(student, d):
    """PE[0] = [0, 1, 0, 1, ...]: sin(0) in even columns, cos(0) in odd ones."""
    pe = table(student, 3, d)
    expected = torch.tensor([float(j % 2) for j in range(d)], dtype=torch.float64)
    close(
        pe[0],
        expected,
        "PE[0]",
        lambda: diagnose(
            _("position 0: every angle is 0, so sin gives 0 and cos gives 1"),
            (
                lambda: is_close(pe[0], 1 - expected, atol=1e-6),
                PE_HINTS(PeMistake.SIN_COS_SWAPPED),
            ),
            (
                lambda: is_close(
                    pe[0], sinusoid_model(1, d, PeMistake.POSITIONS_FROM_1)[0], atol=1e-5
                ),
                PE_HINTS(PeMistake.POSITIONS_FROM_1),
            ),
        ),
        atol=1e-6,
    )


@prop(C, points=3, examples=5, clauses=(PositionalEncoding.TABLE,))
@given(max_len=st.sampled_from([1, 2, 7, 50, 60]), d=st.integers(1, 16))
@example(max_len=50, d=8)
# the size the graded suite uses: a loop too slow for the judge fails here first
@example(max_len=5000, d=64)
def sinusoidal_equals_closed_form(student, max_len, d):
    """PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model))."""
    check_table(student, max_len, d)


@prop(C, points=2, examples=3, clauses=(PositionalEncoding.TABLE,))
@given(max_len=st.sampled_from([20, 60]), half=st.integers(1, 8))
def sinusoidal_pairs_share_a_frequency(student, max_len, half):
    """Each column pair (2i, 2i+1) is (sin a, cos a) of one angle: values in [-1, 1], sin² + cos² = 1."""
    d = 2 * half
    pe = table(student, max_len, d).double()
    expect(
        (pe.abs() <= 1 + 1e-6).all(),
        _("a value of sinusoidal_encoding({max_len}, {d_model}) is outside [-1, 1]").format(
            max_len=max_len, d_model=d
        ),
        _("every entry is a sin or a cos"),
    )
    norm2 = pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2  # (max_len, d/2)
    if not torch.allclose(norm2, torch.ones_like(norm2), atol=1e-5):
        p, i = (int(v) for v in torch.nonzero((norm2 - 1).abs() > 1e-5)[0])
        fail(
            _("PE[{p}, {sin_column}]² + PE[{p}, {cos_column}]² = {value:.6g}, expected 1").format(
                p=p, sin_column=2 * i, cos_column=2 * i + 1, value=norm2[p, i]
            ),
            pe_hint(
                pe,
                max_len,
                d,
                _(
                    "sin and cos of a pair at different frequencies: both columns 2i and 2i+1 "
                    "use the same angle p / 10000^(2i/d_model)"
                ),
            ),
        )


@prop(C, points=1, examples=2, clauses=(PositionalEncoding.TABLE,))
@given(half=st.integers(1, 6), k=st.integers(1, 5))
def sinusoidal_dot_product_depends_on_the_offset_only(student, half, k):
    """PE[p]·PE[p+k] is the same for every p: relative positions are a fixed rotation of each pair."""
    d, max_len = 2 * half, 30
    pe = table(student, max_len, d).double()
    not_constant(pe, expected_values.sinusoidal(max_len, d), f"sinusoidal_encoding({max_len}, {d})")
    dots = (pe[:-k] * pe[k:]).sum(-1)
    if not torch.allclose(dots, dots[0].expand_as(dots), atol=1e-4):
        p = int((dots - dots[0]).abs().argmax())
        fail(
            _(
                "PE[{p}]·PE[{p_plus_k}] = {dot:.6g} but PE[0]·PE[{k}] = {first_dot:.6g}: they should be "
                "equal"
            ).format(p=p, p_plus_k=p + k, dot=dots[p], k=k, first_dot=dots[0]),
            pe_hint(
                pe,
                max_len,
                d,
                _("each pair must be sin and cos of one angle p·ω_i, linear in the position p"),
            ),
        )


@prop(C, points=1, examples=2, error_hint=ODD_HINT, clauses=(PositionalEncoding.TABLE,))
@given(max_len=st.integers(1, 12), d=st.sampled_from([1, 3, 5, 7]))
def sinusoidal_odd_d_model(student, max_len, d):
    """An odd d_model works: (max_len, d_model), the last column a sin."""
    check_table(
        student,
        max_len,
        d,
        _("sinusoidal_encoding({max_len}, {d_model}) with an odd d_model").format(
            max_len=max_len, d_model=d
        ),
    )


# ------------------------------------------------------------------------------------- PositionalEncoding
REGISTER_PE = N_('self.register_buffer("pe", sinusoidal_encoding(max_len, d_model).unsqueeze(0))')


@prop(C, points=1, examples=2, error_hint=NO_HINT, clauses=(PositionalEncoding.BUFFER,))
@given(max_len=st.integers(1, 20), d=st.integers(1, 8))
def positional_encoding_buffer(student, max_len, d):
    """PositionalEncoding(d_model, max_len) holds a buffer pe of shape (1, max_len, d_model): the table."""
    info = student.inspect(student.build(C, "PositionalEncoding", d_model=d, max_len=max_len))
    state, params = info["state"], info["params"]
    expect(
        "pe" in state,
        _("PositionalEncoding has no buffer `pe` (state: {names})").format(
            names=", ".join(state) or _("nothing")
        ),
        _(REGISTER_PE),
    )
    expect(
        "pe" not in params,
        _("pe is a parameter: it would be trained"),
        _('the table is fixed: register it with self.register_buffer("pe", ...), not nn.Parameter'),
    )
    pe = tensor(state["pe"], "PositionalEncoding.pe", shape=(1, max_len, d))
    atol = pe_atol(max_len)
    close(
        pe[0],
        expected_values.sinusoidal(max_len, d),
        "PositionalEncoding.pe[0]",
        lambda: pe_hint(
            pe[0], max_len, d, _("pe is sinusoidal_encoding(max_len, d_model).unsqueeze(0)")
        ),
        rtol=0.0,
        atol=atol,
    )


# long: a registered property: split, its source (Hypothesis's key for its examples) would change
@prop(
    C,
    points=2,
    examples=3,
    error_hint=N_(
        "slice the table to the sequence length: self.pe[:, : x.size(1)], "
        "and keep pe a buffer of shape (1, max_len, d_model)"
    ),
    clauses=(PositionalEncoding.ADDS,),
)
@given(b=st.integers(1, 2), s=st.integers(1, 6), d=st.integers(1, 6), seed=seeds(), dtype=dtypes())
@example(b=1, s=4, d=4, seed=0, dtype=torch.float64)
def positional_encoding_adds_the_table(student, b, s, d, seed, dtype):
    """PositionalEncoding(x) = x + pe[:, :seq] in eval mode (dropout=0.5 off), x's dtype kept."""
    max_len = 8
    h = student.build(C, "PositionalEncoding", d_model=d, max_len=max_len, dropout=0.5, train=False)
    x = randn((b, s, d), seed, dtype)
    y = tensor(student.method(h, "forward", x), "PositionalEncoding(x)", like=x, check_dtype=True)
    pe = expected_values.sinusoidal(max_len, d)[:s]
    expected = x.double() + pe
    atol = pe_atol(max_len) + (2e-5 if dtype == torch.float32 else 0.0)
    if not is_close(y, expected, rtol=1e-6, atol=atol):
        try:
            own = student.inspect(h)["state"].get("pe")
        except StudentError:
            own = None
        if (
            isinstance(own, torch.Tensor)
            and tuple(own.shape) == (1, max_len, d)
            and is_close(y, x.double() + own[0, :s].double(), rtol=1e-6, atol=atol)
        ):
            close(
                y,
                expected,
                "PositionalEncoding(x)",
                _("x + pe is right, but the table pe is not: {diagnosis}").format(
                    diagnosis=pe_hint(
                        own[0], max_len, d, _("fix sinusoidal_encoding (see its properties)")
                    )
                ),
                rtol=1e-6,
                atol=atol,
            )
        close(
            y,
            expected,
            "PositionalEncoding(x)",
            lambda: diagnose(
                _("out = dropout(x + self.pe[:, : x.size(1)]), and dropout is off in eval mode"),
                (
                    lambda: is_close(y, x.double() * math.sqrt(d) + pe, rtol=1e-5, atol=1e-4),
                    _(
                        "x is scaled by sqrt(d_model) here: that scale belongs to TokenEmbedding; "
                        "PositionalEncoding adds pe"
                    ),
                ),
                (
                    lambda: is_close(y, pe.expand_as(y), atol=1e-4),
                    _("returns the table alone: add it to x"),
                ),
                (lambda: is_close(y, x, dtype), _("pe is not added: out = x + pe[:, :seq]")),
                (
                    lambda: (
                        not torch.equal(
                            student.run(Call(h, "forward", (x,), seed=seed + 1)).value, y
                        )
                    ),
                    _(
                        "the output is random in eval mode: use self.dropout = nn.Dropout(dropout), "
                        "which follows .eval()"
                    ),
                ),
            ),
            rtol=1e-6,
            atol=atol,
        )


# ---------------------------------------------------------------------------------------- TokenEmbedding
@prop(C, points=2, examples=3, error_hint=EMBEDDING_ERROR, clauses=(PositionalEncoding.EMBEDDING,))
@given(
    vocab=st.integers(2, 7),
    d=st.integers(1, 6),
    b=st.integers(1, 2),
    s=st.integers(1, 4),
    seed=seeds(),
    dtype=dtypes(),
)
@example(vocab=5, d=4, b=1, s=3, seed=0, dtype=torch.float64)
def token_embedding_scales_by_sqrt_d_model(student, vocab, d, b, s, seed, dtype):
    """TokenEmbedding(tokens) = embedding.weight[tokens] · sqrt(d_model), the weight copied in."""
    w = randn((vocab, d), seed, dtype)
    h = student.build(
        C, "TokenEmbedding", state={"embedding.weight": w}, dtype=dtype, vocab_size=vocab, d_model=d
    )
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (b, s), generator=g)
    y = tensor(
        student.method(h, "forward", tokens),
        "TokenEmbedding(tokens)",
        shape=(b, s, d),
        dtype=dtype,
        check_dtype=True,
    )
    rows = w[tokens].double()
    expected = rows * math.sqrt(d)
    close(
        y,
        expected,
        "TokenEmbedding(tokens)",
        lambda: token_hint(y, rows, d, vocab, dtype),
        dtype=dtype,
    )


def token_hint(y, rows, d, vocab, dtype, default=None):
    """Name the scaling mistake that explains y, rows being the embedding rows of the tokens."""
    return diagnose(
        default or _("out = self.embedding(tokens) * math.sqrt(d_model)"),
        (
            d > 1 and is_close(y, rows, dtype),
            _("missing the sqrt(d_model) scale: multiply the embeddings by math.sqrt(d_model)"),
        ),
        (d > 1 and is_close(y, rows * d, dtype), _("scaled by d_model instead of sqrt(d_model)")),
        (
            d > 1 and is_close(y, rows / math.sqrt(d), dtype),
            _("divided by sqrt(d_model): multiply instead"),
        ),
        (
            is_close(y, rows * math.sqrt(vocab), dtype),
            _("scaled by sqrt(vocab_size): the scale is sqrt(d_model)"),
        ),
    )
