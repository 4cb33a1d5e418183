"""Hidden properties of kv_cache.CachedDecoder and cached_greedy_decode (graded, never shipped to students)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.kv_cache import (
    DEFAULT_HINT,
    PREFIX_HINT,
    SNAPSHOT_HINT,
    STEP_HINTS,
    StepInputs,
    StepMistake,
    cached_decoder,
    cached_greedy_decode,
    changed_weights,
    fixed_steps,
    full_logits,
    load_weights,
    memory_side,
    start,
    step,
    step_inputs,
)
from ..properties.models.greedy import expected_greedy_decode
from ..properties.models.transformer import ExpectedTransformer
from ..suite.checks import close, consistent, diagnose, fail, is_close
from ..suite.clauses import KvCache
from ..suite.core import prop
from ..suite.decoding import (
    Decoding,
    build_model,
    decoding_cases,
    expect_run_in_eval_and_restored,
    fixed_case,
)
from ..suite.expected_values import expected_causal_mask

C = "kv_cache"


@prop(C, points=1, examples=2, visible=False, clauses=(KvCache.STEPS,))
@given(
    inputs=step_inputs(batch=(2, 3), chunk=(1, 2), steps=(2, 3)),
    order=st.randoms(use_true_random=False),
)
@example(inputs=fixed_steps(12, (1, 2), b=3, me=4, lengths=[4, 1, 3]), order=None)
def kv_cache_rows_are_independent(student, inputs, order):
    """Permuting the batch permutes each step's logits: a row never reads another row's cache."""
    case = inputs.case
    b = case.src.shape[0]
    perm = (
        torch.roll(torch.arange(b), 1) if order is None else torch.tensor(order.sample(range(b), b))
    )
    moved = StepInputs(
        case.replace(
            src=case.src[perm], src_mask=None if case.src_mask is None else case.src_mask[perm]
        ),
        inputs.tgt[perm],
        inputs.chunks,
    )
    decoder, _model, state = cached_decoder(student, case)
    other = cached_decoder(student, moved.case, state)[0]
    start(student, decoder, case)
    start(student, other, moved.case)
    expected = full_logits(case, state, inputs.tgt)
    done = 0
    for n in inputs.chunks:
        got = step(student, decoder, case, inputs.tgt[:, done : done + n]).value
        permuted = step(student, other, moved.case, moved.tgt[:, done : done + n]).value
        consistent(
            permuted,
            got[perm],
            _("the step at positions {first}..{last} with the batch permuted").format(
                first=done, last=done + n - 1
            ),
            STEP_HINTS(StepMistake.SHARED_MEMORY),
            dtype=case.dtype,
            expected=expected[:, done : done + n],
        )
        done += n


@prop(C, points=1, examples=1, visible=False, clauses=(KvCache.CACHE,))
@given(inputs=step_inputs(steps=(2, 3), mask=False))
def kv_cache_start_resets_the_cache(student, inputs):
    """start() on a second sequence empties the cache: its steps equal decoding it from scratch."""
    case = inputs.case
    decoder, _model, state = cached_decoder(student, case)
    start(student, decoder, case)
    step(student, decoder, case, inputs.tgt[:, :2])
    other = case.replace(src=case.src.flip(1))
    start(student, decoder, other)
    expected = full_logits(other, state, inputs.tgt)
    done = 0
    for n in inputs.chunks:
        got = step(student, decoder, other, inputs.tgt[:, done : done + n]).value
        want = expected[:, done : done + n]
        if not is_close(got, want, case.dtype):
            close(
                got,
                want,
                _("after start() on a new source, the step at positions {first}..{last}").format(
                    first=done, last=done + n - 1
                ),
                _(
                    "start resets everything: length = 0, empty self_keys/self_values, the new memory's "
                    "keys/values"
                )
                if done == 0
                else _(DEFAULT_HINT),
                dtype=case.dtype,
            )
        done += n


@prop(C, points=1, examples=1, visible=False, clauses=(KvCache.MODE,))
@given(case=decoding_cases(mask=False, layers=(1, 1)))
@example(case=fixed_case(6, n=1))
def cached_greedy_decode_runs_in_eval_and_restores_mode(student, case):
    """A model in train mode decodes in eval mode, without gradients, and is left in train mode.

    With dropout=0.5 the tokens equal the dropout-free expected model's."""
    state = case.config.state(2, 0.5)
    model = build_model(student, case, state, dropout=0.5, train=True)[0]
    decoding = Decoding(max_len=5, bos_id=1, eos_id=2)
    ys, reply = cached_greedy_decode(student, model, case, decoding)
    expect_run_in_eval_and_restored(student, model, reply, "cached_greedy_decode")
    expected = expected_greedy_decode(state, case, decoding)
    if not (ys.shape == expected.shape and torch.equal(ys, expected)):
        fail(
            _(
                "cached_greedy_decode of a model in train mode gave {got}, expected {expected}"
            ).format(got=ys.tolist(), expected=expected.tolist()),
            _(
                "call model.eval() while decoding (dropout off), then restore the model's "
                "train/eval mode"
            ),
        )


# ------------------------------------------------------------------- the cache's semantics, weights changing
# A by-hand decoder (graded side only, issue 18): what a cache computes when the model's weights change between
# steps. The keys and values of a position are those of the weights it was stepped with; the memory's those of
# start. With weights that never change it equals the expected model (tests/test_kv_cache_behaviour.py).
def _linear(s, name, x):
    return F.linear(x, s[name + ".weight"], s[name + ".bias"])


def _heads(x, h):
    b, m, d = x.shape
    return x.view(b, m, h, d // h).transpose(1, 2)


def _attend(s, name, h, x, keys, values, mask):
    q = _heads(_linear(s, name + ".w_q", x), h)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    out = (scores.softmax(-1) @ values).transpose(1, 2)
    return _linear(s, name + ".w_o", out.reshape(*x.shape[:2], -1))


def _norm(s, name, x):
    return F.layer_norm(x, x.shape[-1:], s[name + ".norm.weight"], s[name + ".norm.bias"], 1e-5)


class ExpectedCache:
    """start(state) then step(state, tokens) with any state at each step: logits (batch, n, vocab).

    reproject: the mistake that caches each layer's inputs and projects them again at every step."""

    def __init__(self, case, state, reproject=False):
        self.reproject, self.inputs = reproject, [None] * case.num_layers
        self.case, h = case, case.num_heads
        memory = ExpectedTransformer(state, case.config).encode(case.src, case.src_mask)
        self.memory = [
            tuple(
                _heads(_linear(state, f"decoder.layers.{i}.cross_attention.{w}", memory), h)
                for w in ("w_k", "w_v")
            )
            for i in range(case.num_layers)
        ]
        self.keys = [None] * case.num_layers
        self.values = [None] * case.num_layers
        self.length = 0

    def step(self, s, tokens):
        case, h, t, n = self.case, self.case.num_heads, self.length, tokens.shape[1]
        x = F.embedding(tokens, s["tgt_embedding.embedding.weight"]) * math.sqrt(case.d_model)
        x = x + s["positional_encoding.pe"][:, t : t + n].to(x.dtype)
        mask = expected_causal_mask(t + n)[t:]
        for i in range(case.num_layers):
            p = f"decoder.layers.{i}."
            if self.reproject:
                self.inputs[i] = x if t == 0 else torch.cat([self.inputs[i], x], 1)
            seen = self.inputs[i] if self.reproject else x
            k = _heads(_linear(s, p + "self_attention.w_k", seen), h)
            v = _heads(_linear(s, p + "self_attention.w_v", seen), h)
            if t and not self.reproject:
                k, v = torch.cat([self.keys[i], k], 2), torch.cat([self.values[i], v], 2)
            self.keys[i], self.values[i] = k, v
            x = _norm(s, p + "add_norm_1", x + _attend(s, p + "self_attention", h, x, k, v, mask))
            mk, mv = self.memory[i]
            attended = _attend(s, p + "cross_attention", h, x, mk, mv, self.case.src_mask)
            x = _norm(s, p + "add_norm_2", x + attended)
            ff = _linear(
                s, p + "feed_forward.linear_2", _linear(s, p + "feed_forward.linear_1", x).relu()
            )
            x = _norm(s, p + "add_norm_3", x + ff)
        self.length = t + n
        return _linear(s, "generator", x)


def target_side(state) -> list[str]:
    """Every weight a step uses on the new positions, but none that reaches it only through the memory."""
    memory = set(memory_side(state))
    return [
        n
        for n in state
        if n not in memory
        and n
        != "positional_encoding.pe"  # shared with the encoder: changing it would re-charge the memory
        and n.startswith(("decoder.", "tgt_embedding.", "generator."))
    ]


@prop(C, points=4, examples=2, visible=False, clauses=(KvCache.KEPT,))
@given(inputs=step_inputs(chunk=(1, 2), steps=(2, 4), batch=(1, 2)), seed=st.integers(0, 2**16))
@example(inputs=fixed_steps(8, (2, 1, 1), b=2, me=3, d=4, h=2, n=2), seed=3)
def kv_cache_keeps_the_keys_of_earlier_steps(student, inputs, seed):
    """Before every step but the first, every decoder weight changes (embedding, each layer, generator): the
    keys and values cached at earlier steps stay as they were computed, the new positions use the new weights.

    A recomputation of the prefix, or a cache of each layer's inputs re-projected at every step, follows the
    new weights; a copy of the model taken earlier misses them. Checked by the logits, never by counting."""
    case = inputs.case
    decoder, model, state = cached_decoder(student, case)
    start(student, decoder, case)
    expected, snapshot = ExpectedCache(case, state), ExpectedCache(case, state)
    reprojected = ExpectedCache(case, state, reproject=True)
    names, now, done = target_side(state), state, 0
    for number, n in enumerate(inputs.chunks):
        if number:
            now = {**state, **changed_weights(state, names, seed + number)}
            load_weights(student, model, now)
        tokens = inputs.tgt[:, done : done + n]
        got = step(student, decoder, case, tokens).value
        want, old = expected.step(now, tokens), snapshot.step(state, tokens)
        again = reprojected.step(now, tokens)
        if not is_close(got, want, case.dtype):

            def explain(got=got, now=now, old=old, again=again, done=done, n=n):
                full = full_logits(case, now, inputs.tgt[:, : done + n])[:, done:]
                return diagnose(
                    _(DEFAULT_HINT),
                    (lambda: is_close(got, full, case.dtype), _(PREFIX_HINT)),
                    (lambda: is_close(got, again, case.dtype), _(PREFIX_HINT)),
                    (lambda: is_close(got, old, case.dtype), _(SNAPSHOT_HINT)),
                )

            close(
                got,
                want,
                _(
                    "the step at positions {first}..{last}, after the decoder's weights changed (the keys "
                    "and values of earlier steps must be kept as they were computed)"
                ).format(first=done, last=done + n - 1),
                explain,
                dtype=case.dtype,
            )
        done += n
