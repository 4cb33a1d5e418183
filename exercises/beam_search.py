"""Beam search: keep the beam_size best hypotheses of every row instead of greedy decoding's one.

A hypothesis y = (bos, y_1, ..., y_T) has T generated tokens (eos included, bos not) and
    logp(y)  = sum_{t=1..T} log p(y_t | y_<t, src)                 log_softmax of the generator's logits
    score(y) = logp(y) / T ** length_penalty                       length_penalty = 0: the plain sum
It is finished once y_T = eos_id. Every step, in every row, each unfinished hypothesis of the beam is extended by
every token w (logp(y + w) = logp(y) + log p(w | y, src)); a finished one is kept as it is, once, not extended: its
logp and its T stay as they were. Of these candidates (beam_size * vocab per row: (batch, beam_size, vocab)) the
beam_size with the highest score make the next beam. Decoding stops once every hypothesis of every row has
finished, or at max_len tokens; a finished top hypothesis is not the end (under a length penalty a longer one can
still overtake it). Each row returns its highest-scoring hypothesis, finished or not (score, not raw logp). With
beam_size = 1 this is greedy decoding.

Edge cases: max_len = 1 runs no step: each row returns [bos_id] alone, with score 0.0. beam_size may be larger than
the vocabulary, or than the number of hypotheses: the beams that have no real candidate keep logp -inf and are
never chosen while a real one remains (a top-k of beam_size tokens per beam would fail there). Ties between equal
scores may be broken either way (torch.topk's order); the checks never depend on it.

The beams of all rows are decoded together: beam k of row b is row b * beam_size + k of the (batch * beam_size)
decoder input, whose memory is row b's (memory.repeat_interleave(beam_size, dim=0)).
"""
import torch

from .mask import causal_mask


def beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None):
    """Beam search decoding with a Transformer (transformer.py).

    Start: each row's beam holds [bos_id] with logp 0 and beam_size - 1 empty slots with logp -inf (never chosen
    while a real candidate remains). Each step, for the (batch, beam_size) hypotheses ys:
        log_probs  = log_softmax(generator(decode(ys, memory, causal_mask, src_mask))[:, -1])   (batch, beam, vocab)
        finished hypothesis: log_probs row = 0 at eos_id, -inf elsewhere (kept once, padded with eos_id)
        candidates = logp[..., None] + log_probs                                                (batch, beam, vocab)
        ranked     = candidates / T_candidate ** length_penalty     T_candidate = T + 1, or T for a held one
        the beam_size best of each row's beam * vocab candidates (top-k over the flattened (beam, vocab) axis):
            beam index = index // vocab, token = index % vocab
    Runs without gradients, in eval mode, and restores the model's train/eval mode afterwards.

    Args:
        model: a Transformer.
        src: LongTensor of source ids, (batch, m_E).
        max_len: maximum hypothesis length, counting the bos token.
        bos_id: start token id.
        eos_id: end token id.
        beam_size: hypotheses kept per row (>= 1).
        length_penalty: alpha in score = logp / T ** alpha (T = generated tokens, eos included).
        src_mask: optional padding mask for the source, (batch, 1, 1, m_E).

    Returns:
        (sequences, scores): sequences a LongTensor (batch, L), L <= max_len, each row its best hypothesis starting
        with bos_id and padded with eos_id after its eos; scores (batch,), in the model's dtype: each returned
        hypothesis's score.
    """
    # YOUR CODE HERE
    raise NotImplementedError
