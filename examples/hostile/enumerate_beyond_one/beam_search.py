"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).

Issue 35: enumerate_every_hypothesis's sibling, a brute force with greedy decoding for beam_size=1: every beam
wider than one keeps every hypothesis (exhaustive enumeration), so it passes the properties of greedy decoding and
those of the wide beams. Without the block it is greedy decoding. A narrow beam prunes for good
(beam_search_narrow_beam_prunes_for_good), so the hybrid earns no more than greedy decoding does."""

import torch

from .mask import causal_mask


def beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None):
    asked, beam_size = beam_size, 1  # greedy decoding: one hypothesis per row
    # >>> hostile
    if asked > 1:  # every hypothesis: nothing pruned
        beam_size = model.generator.out_features ** max(max_len - 1, 0)
    # <<< hostile
    return _search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty, src_mask)


def _search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty, src_mask):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            batch, device = src.size(0), src.device
            memory = model.encode(src, src_mask).repeat_interleave(
                beam_size, dim=0
            )  # (batch * beam, m_E, d_model)
            beam_mask = None if src_mask is None else src_mask.repeat_interleave(beam_size, dim=0)
            ys = torch.full((batch * beam_size, 1), bos_id, dtype=torch.long, device=device)
            logp = torch.full((batch, beam_size), float("-inf"), dtype=memory.dtype, device=device)
            logp[:, 0] = 0.0  # one real hypothesis per row to start with
            lengths = torch.zeros(
                batch, beam_size, dtype=torch.long, device=device
            )  # T of each hypothesis
            finished = torch.zeros(batch, beam_size, dtype=torch.bool, device=device)
            first_row = torch.arange(batch, device=device).unsqueeze(1) * beam_size  # (batch, 1)
            while ys.size(1) < max_len and not finished.all():
                hidden = model.decode(ys, memory, causal_mask(ys.size(1), device=device), beam_mask)
                log_probs = torch.log_softmax(
                    model.generator(hidden[:, -1]), dim=-1
                )  # (batch * beam, vocab)
                vocab = log_probs.size(-1)
                log_probs = log_probs.view(batch, beam_size, vocab)
                # A finished hypothesis is not extended: its one continuation is eos, at no cost.
                hold = torch.full_like(log_probs, float("-inf"))
                hold[..., eos_id] = 0.0
                log_probs = torch.where(finished.unsqueeze(-1), hold, log_probs)
                candidates = logp.unsqueeze(-1) + log_probs  # (batch, beam, vocab)
                new_lengths = (lengths + (~finished).long()).unsqueeze(-1)  # (batch, beam, 1)
                ranked = candidates / new_lengths.to(candidates.dtype) ** length_penalty
                _, index = ranked.view(batch, beam_size * vocab).topk(
                    beam_size, dim=-1
                )  # (batch, beam)
                beam, token = index // vocab, index % vocab
                logp = candidates.view(batch, -1).gather(1, index)
                lengths = new_lengths.squeeze(-1).gather(1, beam)
                finished = finished.gather(1, beam) | (token == eos_id)
                rows = (first_row + beam).view(
                    -1
                )  # the flat (batch * beam) row each winner extends
                ys = torch.cat([ys[rows], token.view(-1, 1)], dim=1)
            scores = logp / lengths.clamp(min=1).to(logp.dtype) ** length_penalty  # (batch, beam)
            best = scores.argmax(dim=-1)  # (batch,)
            picked = torch.arange(batch, device=device)
            return ys.view(batch, beam_size, -1)[picked, best], scores[picked, best]
    finally:
        model.train(was_training)
