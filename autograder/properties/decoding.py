"""What the decoding properties (kv_cache, beam_search) share: a tiny model with a batch to decode, its expected model.

The model is built from transformer.py (the student's own in the self-check, the reference in the judge) with
the weights of the case's config (models.transformer.TransformerConfig), in float64 unless the case says float32.
The expected model is models.transformer.ExpectedTransformer, the same model assembled from torch's own layers;
every expected value is computed from it on the checking side.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .models.transformer import ExpectedTransformer, TransformerConfig
from .strategies import LabelledCase, seeds

MAX_LEN = 32  # the positional encoding's table: longer than any decoded sequence here
SRC_VOCAB = 5


@dataclasses.dataclass(frozen=True, repr=False)
class DecodingCase(LabelledCase):
    """Transformer(SRC_VOCAB, tgt_vocab, d_model, num_heads, num_layers, d_ff=8) with weights from `seed`, a
    source batch src (batch, m_E) and its padding src_mask (batch, 1, 1, m_E) or None."""

    src: torch.Tensor
    src_mask: torch.Tensor | None
    tgt_vocab: int
    d_model: int
    num_heads: int
    num_layers: int
    seed: int
    dtype: torch.dtype = torch.float64
    d_ff: int = 8

    @property
    def config(self) -> TransformerConfig:
        return TransformerConfig(
            SRC_VOCAB,
            self.tgt_vocab,
            self.d_model,
            self.num_heads,
            self.num_layers,
            self.seed,
            MAX_LEN,
            self.d_ff,
        )

    # The two shorthands beam_search.py calls (its answer-free rewrite is under way elsewhere: it can call
    # case.config.state() and ExpectedTransformer(state, case.config) itself, and these two go).
    def state(self, eos_id=None, eos_bias=0.0) -> dict:
        return self.config.state(eos_id, eos_bias)

    def expected_model(self, state) -> ExpectedTransformer:
        return ExpectedTransformer(state, self.config)

    def replace(self, **changes) -> DecodingCase:
        return dataclasses.replace(self, **changes)


def padded(src: torch.Tensor, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """src with pad tokens (id 0) after each row's length, and the padding mask that blocks them."""
    keep = torch.arange(src.shape[1])[None, :] < torch.as_tensor(lengths)[:, None]
    return src.masked_fill(~keep, 0), keep[:, None, None, :]


@st.composite
def decoding_cases(
    draw,
    batch=(1, 3),
    m_e=(2, 5),
    vocab=(5, 7),
    layers=(1, 2),
    mask="maybe",
    dtypes=(torch.float64,),
):
    h = draw(st.integers(1, 2))
    d = draw(st.sampled_from([4, 6, 8] if h == 2 else [4, 5, 6]))
    b, me = draw(st.integers(*batch)), draw(st.integers(*m_e))
    src = torch.from_numpy(
        draw(hnp.arrays(np.int64, (b, me), elements=st.integers(1, SRC_VOCAB - 1)))
    )
    src_mask = None
    if mask is True or (mask == "maybe" and draw(st.booleans())):
        src, src_mask = padded(src, draw(st.lists(st.integers(1, me), min_size=b, max_size=b)))
    return DecodingCase(
        src,
        src_mask,
        draw(st.integers(*vocab)),
        d,
        h,
        draw(st.integers(*layers)),
        draw(seeds()),
        draw(st.sampled_from(dtypes)),
    )


def fixed_case(
    seed, b=2, me=4, vocab=6, d=8, h=2, n=2, lengths=None, dtype=torch.float64
) -> DecodingCase:
    src = torch.randint(1, SRC_VOCAB, (b, me), generator=torch.Generator().manual_seed(seed))
    src_mask = None
    if lengths is not None:
        src, src_mask = padded(src, lengths)
    return DecodingCase(src, src_mask, vocab, d, h, n, seed, dtype)


def build_model(student, case: DecodingCase, state=None, dropout=0.0, train=False):
    """The Transformer under the kit's names, built through the interface; returns (handle, state)."""
    state = case.config.state() if state is None else state
    handle = student.build(
        "transformer",
        "Transformer",
        state=state,
        train=train,
        dtype=case.dtype,
        **case.config.kwargs(dropout),
    )
    return handle, state
