"""What the decoding properties (transformer's greedy_decode, kv_cache, beam_search) share: a tiny model with a
batch to decode, its expected model, greedy decoding's verdict as a fixed point, and the check that a decoding
function ran the model in eval mode without gradients.

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

from ..i18n import N_, _
from ..properties.models.transformer import ExpectedTransformer, SizedCase
from .checks import expect
from .expected_values import expected_causal_mask
from .strategies import LabelledCase, composite, seeds

MAX_LEN = 32  # the positional encoding's table: longer than any decoded sequence here
SRC_VOCAB = 5


@dataclasses.dataclass(frozen=True, repr=False)
class DecodingCase(LabelledCase, SizedCase):
    """Transformer(SRC_VOCAB, tgt_vocab, d_model, num_heads, num_layers, d_ff=8) with weights from `seed`, a
    source batch src (batch, m_E) and its padding src_mask (batch, 1, 1, m_E) or None."""

    # Not fields (a case prints as it always has): every decoding case's, read by SizedCase.config.
    src_vocab = SRC_VOCAB
    max_len = MAX_LEN

    src: torch.Tensor
    src_mask: torch.Tensor | None
    tgt_vocab: int
    d_model: int
    num_heads: int
    num_layers: int
    seed: int
    dtype: torch.dtype = torch.float64
    d_ff: int = 8

    def replace(self, **changes) -> DecodingCase:
        return dataclasses.replace(self, **changes)


def padded(src: torch.Tensor, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """src with pad tokens (id 0) after each row's length, and the padding mask that blocks them."""
    keep = torch.arange(src.shape[1])[None, :] < torch.as_tensor(lengths)[:, None]
    return src.masked_fill(~keep, 0), keep[:, None, None, :]


@composite
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


# eq=False: src_mask is a tensor, and == between tensors compares them elementwise
@dataclasses.dataclass(frozen=True, eq=False)
class Decoding:
    """The settings of one greedy decoding, as the decoding functions take them: greedy_decode(model, src,
    max_len, bos_id, eos_id, src_mask) and cached_greedy_decode; src_mask (batch, 1, 1, m_E) or None."""

    max_len: int
    bos_id: int
    eos_id: int
    src_mask: torch.Tensor | None = None

    def kwargs(self) -> dict:
        """The keyword arguments of the student's call (src_mask only when there is one)."""
        kwargs = dict(max_len=self.max_len, bos_id=self.bos_id, eos_id=self.eos_id)
        if self.src_mask is not None:
            kwargs["src_mask"] = self.src_mask
        return kwargs

    def call(self, function: str) -> str:
        """The call as a message shows it (without src_mask, a tensor)."""
        return (
            f"{function}(model, src, max_len={self.max_len}, bos_id={self.bos_id}, "
            f"eos_id={self.eos_id})"
        )

    def unmasked(self) -> Decoding:
        return dataclasses.replace(self, src_mask=None)


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


def greedy_fixed_point(ys, state, case: DecodingCase, decoding: Decoding):
    """Why `ys` (batch, L) is not greedy decoding's output on the torch-assembled model, or None when it is.

    One teacher-forced pass over ys itself gives, at every position, the next token greedy decoding would choose
    after that prefix: ys is greedy's output exactly when each token of a row not yet finished is that argmax,
    each token after a row's eos_id is eos_id, and ys stops at max_len tokens or once every row has finished."""
    max_len, eos_id = decoding.max_len, decoding.eos_id
    length = ys.shape[1]
    if length > max_len:
        return _("{n} tokens, more than max_len={max_len}").format(n=length, max_len=max_len)
    if length == 0 or not bool((ys[:, 0] == decoding.bos_id).all()):
        return _("every row starts with bos_id={bos_id}").format(bos_id=decoding.bos_id)
    # The rule checked at every position at once (no decoding loop on the checking side): a position holds eos_id
    # where its row finished before it, else the argmax one teacher-forced pass gives after the prefix before it.
    logits = ExpectedTransformer(state, case.config).forward(
        case.src, ys, decoding.src_mask, expected_causal_mask(length)
    )
    is_eos = ys[:, 1:] == eos_id  # positions 1..L-1
    finished_before = (is_eos.long().cumsum(1) - is_eos.long()) > 0
    want = torch.where(
        finished_before, torch.full_like(ys[:, 1:], eos_id), logits.argmax(-1)[:, :-1]
    )
    wrong = ys[:, 1:] != want
    flagged = (finished_before.all(0) | wrong.any(0)).nonzero().flatten().tolist()
    if flagged:
        i = flagged[0]
        if bool(finished_before[:, i].all()):
            return _("every row had produced eos_id={eos_id} before position {t}").format(
                eos_id=eos_id, t=i + 1
            )
        r = int(wrong[:, i].nonzero()[0])
        return _("row {row}, position {t}: {got}, but the greedy choice there is {want}").format(
            row=r, t=i + 1, got=int(ys[r, i + 1]), want=int(want[r, i])
        )
    if length < max_len and not bool(is_eos.any(1).all()):
        return _("{n} tokens, but a row is unfinished and max_len={max_len}").format(
            n=length, max_len=max_len
        )
    return None


RESTORE_MODE = N_(
    "restore the model's train/eval mode: note model.training before you switch to eval, and give that back "
    "at the end"
)
IN_EVAL = {
    False: N_("decode with model.eval() (dropout off), then restore the model's train/eval mode"),
    True: N_("search with model.eval() (dropout off), then restore the model's train/eval mode"),
}
NO_GRAD = {
    False: N_("decode under torch.no_grad(): no autograd graph is needed"),
    True: N_("search under torch.no_grad(): no autograd graph is needed"),
}


def expect_run_in_eval_and_restored(student, handle, reply, function: str, search: bool = False):
    """A decoding function (greedy_decode, kv_cache's cached_greedy_decode, beam_search) called on a model built
    in train mode: it ran the model in eval mode (reply.training_seen) without gradients, and left it in train
    mode. Each property then compares the tokens with the dropout-free expected model's."""
    expect(
        student.inspect(handle)["training"],
        _("after {function} the model is no longer in train mode").format(function=function),
        _(RESTORE_MODE),
    )
    expect(
        not any(reply.training_seen),
        _("the model ran in train mode during {function}").format(function=function),
        _(IN_EVAL[search]),
    )
    expect(
        not any(reply.grad_enabled_seen),
        _("{function} ran the model with gradients enabled").format(function=function),
        _(NO_GRAD[search]),
    )
