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
    ### BEGIN SOLUTION
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            batch, device = src.size(0), src.device
            memory = model.encode(src, src_mask).repeat_interleave(beam_size, dim=0)  # (batch * beam, m_E, d_model)
            beam_mask = None if src_mask is None else src_mask.repeat_interleave(beam_size, dim=0)
            ys = torch.full((batch * beam_size, 1), bos_id, dtype=torch.long, device=device)
            logp = torch.full((batch, beam_size), float("-inf"), dtype=memory.dtype, device=device)
            logp[:, 0] = 0.0  # one real hypothesis per row to start with
            lengths = torch.zeros(batch, beam_size, dtype=torch.long, device=device)  # T of each hypothesis
            finished = torch.zeros(batch, beam_size, dtype=torch.bool, device=device)
            first_row = torch.arange(batch, device=device).unsqueeze(1) * beam_size  # (batch, 1)
            while ys.size(1) < max_len and not finished.all():
                hidden = model.decode(ys, memory, causal_mask(ys.size(1), device=device), beam_mask)
                log_probs = torch.log_softmax(model.generator(hidden[:, -1]), dim=-1)  # (batch * beam, vocab)
                vocab = log_probs.size(-1)
                log_probs = log_probs.view(batch, beam_size, vocab)
                # A finished hypothesis is not extended: its one continuation is eos, at no cost.
                hold = torch.full_like(log_probs, float("-inf"))
                hold[..., eos_id] = 0.0
                log_probs = torch.where(finished.unsqueeze(-1), hold, log_probs)
                candidates = logp.unsqueeze(-1) + log_probs  # (batch, beam, vocab)
                new_lengths = (lengths + (~finished).long()).unsqueeze(-1)  # (batch, beam, 1)
                ranked = candidates / new_lengths.to(candidates.dtype) ** length_penalty
                _, index = ranked.view(batch, beam_size * vocab).topk(beam_size, dim=-1)  # (batch, beam)
                beam, token = index // vocab, index % vocab
                logp = candidates.view(batch, -1).gather(1, index)
                lengths = new_lengths.squeeze(-1).gather(1, beam)
                finished = finished.gather(1, beam) | (token == eos_id)
                rows = (first_row + beam).view(-1)  # the flat (batch * beam) row each winner extends
                ys = torch.cat([ys[rows], token.view(-1, 1)], dim=1)
            scores = logp / lengths.clamp(min=1).to(logp.dtype) ** length_penalty  # (batch, beam)
            best = scores.argmax(dim=-1)  # (batch,)
            picked = torch.arange(batch, device=device)
            return ys.view(batch, beam_size, -1)[picked, best], scores[picked, best]
    finally:
        model.train(was_training)
    ### END SOLUTION
