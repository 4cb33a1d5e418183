"""Hidden properties of transformer.Transformer and greedy_decode (graded, never shipped to students)."""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.models.greedy import expected_greedy_decode
from ..properties.models.transformer import MODEL_HINTS, ExpectedTransformer, ModelMistake
from ..suite.checks import close, diagnose, expect, fail, is_close, tensor
from ..suite.clauses import Transformer
from ..suite.core import prop
from ..suite.decoding import Decoding, build_model
from ..suite.expected_values import expected_causal_mask
from ..suite.model_runs import (
    cases,
    eos_biased,
    expect_finished_rows_hold_eos,
    explain_greedy,
    fixed_case,
    forward,
    greedy_decode,
)

C = "transformer"


def _finishing_case(seed, bias):
    """A case where rows finish at different steps (found by search; the property re-checks it)."""
    return fixed_case(
        seed, batch=3, m_e=4, d_model=4, num_heads=2, num_layers=1, vocab=(5, 6)
    ), bias


@prop(C, points=2, examples=1, visible=False, clauses=(Transformer.FINISHED,))
@given(
    cb=st.tuples(
        cases(mask=False, max_layers=1, m_d=(1, 1), batch=(2, 3)), st.sampled_from([1.0, 2.0])
    )
)
@example(cb=_finishing_case(14, 1.5))
@example(cb=_finishing_case(30, 1.5))
def greedy_decode_finished_rows_hold_eos(student, cb):
    """After a row produces eos_id it holds eos_id; decoding stops as soon as every row has finished."""
    case, bias = cb
    decoding = Decoding(max_len=7, bos_id=1, eos_id=2)
    handle, state = build_model(student, case, state=eos_biased(case, decoding.eos_id, bias))
    ys = greedy_decode(student, handle, case, decoding)[0]
    expect_finished_rows_hold_eos(ys, decoding)
    expected = expected_greedy_decode(state, case, decoding)
    if not (ys.shape == expected.shape and torch.equal(ys, expected)):
        fail(
            _("greedy_decode gave {got}, expected {expected}").format(
                got=ys.tolist(), expected=expected.tolist()
            ),
            explain_greedy(ys, state, case, decoding, _("finished rows get eos_id")),
        )


@prop(C, points=1, examples=1, visible=False, clauses=(Transformer.GREEDY_SRC_MASK,))
@given(case=cases(mask=True, max_layers=1, m_e=(3, 5), m_d=(1, 1)))
@example(case=fixed_case(10, num_layers=1, lengths=[2, 5]))
def greedy_decode_with_src_mask_equals_expected(student, case):
    """With a padding src_mask, greedy_decode equals the expected tokens (the mask serves encode and decode)."""
    decoding = Decoding(max_len=6, bos_id=1, eos_id=2, src_mask=case.src_mask)
    handle, state = build_model(student, case, state=eos_biased(case, decoding.eos_id, 1.0))
    ys = greedy_decode(student, handle, case, decoding)[0]
    expected = expected_greedy_decode(state, case, decoding)
    if not (ys.shape == expected.shape and torch.equal(ys, expected)):
        fail(
            _("greedy_decode with src_mask gave {got}, expected {expected}").format(
                got=ys.tolist(), expected=expected.tolist()
            ),
            explain_greedy(
                ys,
                state,
                case,
                decoding,
                _(
                    "pass src_mask to encode and to every decode: model.encode(src, src_mask), "
                    "model.decode(ys, memory, causal_mask(L), src_mask)"
                ),
            ),
        )


@prop(C, points=1, examples=1, visible=False, clauses=(Transformer.MODE,))
@given(case=cases(mask=False, max_layers=1, m_d=(1, 1)))
def greedy_decode_keeps_eval_mode(student, case):
    """A model in eval mode is still in eval mode after greedy_decode."""
    handle = build_model(student, case, state=eos_biased(case, 2, 0.5), dropout=0.3, train=False)[0]
    greedy_decode(student, handle, case, Decoding(max_len=4, bos_id=1, eos_id=2))
    expect(
        not student.inspect(handle)["training"],
        _("greedy_decode left a model that was in eval mode in train mode"),
        _(
            "restore the model's train/eval mode as it was: note model.training before you switch to "
            "eval, and give that back at the end (model.train() alone always leaves train mode)"
        ),
    )


@prop(
    C,
    points=1,
    examples=2,
    visible=False,
    clauses=(
        Transformer.FORWARD,
        Transformer.SRC_MASK,
    ),
)
@given(case=cases(max_layers=1))
@example(case=fixed_case(9, m_d=4, lengths=[3, 5]))
def transformer_encode_and_decode_equal_torch(student, case):
    """encode(src, src_mask) equals the expected memory; decode(tgt, memory, causal, src_mask) its hidden states."""
    handle, state = build_model(student, case)
    model = ExpectedTransformer(state, case.config)
    kwargs = {} if case.src_mask is None else {"src_mask": case.src_mask}
    memory = tensor(
        student.method(handle, "encode", case.src, **kwargs),
        "Transformer.encode(src, src_mask)",
        shape=(*case.src.shape, case.d_model),
        dtype=torch.float64,
    )
    expected = model.encode(case.src, case.src_mask)
    close(
        memory,
        expected,
        _("encode(src, src_mask) vs the expected model"),
        _("memory = encoder(positional_encoding(src_embedding(src)), src_mask)"),
    )
    tm = expected_causal_mask(case.tgt.shape[1])
    hidden = student.method(
        handle, "decode", case.tgt, expected, target_mask=tm, memory_mask=case.src_mask
    )
    hidden = tensor(
        hidden,
        "Transformer.decode(tgt, memory, target_mask, memory_mask)",
        shape=(*case.tgt.shape, case.d_model),
        dtype=torch.float64,
    )
    expected_hidden = model.decode(case.tgt, expected, tm, case.src_mask)

    def decoded_with(mistake):
        return ExpectedTransformer(state, case.config, mistake).decode(
            case.tgt, expected, tm, case.src_mask
        )

    close(
        hidden,
        expected_hidden,
        _("decode(tgt, memory, target_mask, memory_mask) vs the expected model"),
        lambda: diagnose(
            _(
                "hidden = decoder(positional_encoding(tgt_embedding(tgt)), memory, target_mask, "
                "memory_mask): hidden states, not logits"
            ),
            *MODEL_HINTS.candidates(
                lambda m: is_close(hidden, decoded_with(m)),
                ModelMistake.NO_PE_TGT,
                ModelMistake.TGT_EMBEDDED_WITH_SRC,
            ),
        ),
    )


@prop(C, points=1, examples=1, visible=False, clauses=(Transformer.DROPOUT,))
@given(case=cases(mask=False, max_layers=1))
def transformer_dropout_is_used_in_training(student, case):
    """Built with dropout=0.5 in train mode, two forwards with different seeds differ (dropout is passed on)."""
    handle = build_model(student, case, dropout=0.5, train=True)[0]
    tm = expected_causal_mask(case.tgt.shape[1])
    a, b = forward(student, handle, case, tm, seed=1), forward(student, handle, case, tm, seed=2)
    expect(
        not torch.equal(a, b),
        _("with dropout=0.5 in train mode two forwards gave identical logits"),
        _("pass dropout on to positional_encoding, encoder and decoder"),
    )
    # and dropout is what differs: noise from the seeded generators differs with the seed too (seeded_noise)
    plain = build_model(student, case, dropout=0.0, train=True)[0]
    expect(
        torch.equal(
            forward(student, plain, case, tm, seed=1), forward(student, plain, case, tm, seed=2)
        ),
        _(
            "with dropout=0 in train mode two forwards gave different logits: something random besides dropout"
        ),
        _(
            "the logits come from the model's layers: no random tensors (torch.randn, ...) in forward"
        ),
    )
