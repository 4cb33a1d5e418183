# >>> hostile
# A search that computes nothing but handles the model's mode: eval() during one forward, the mode restored, and
# one constant for every sequence and score (bos_id then eos_id, -3). It agrees with itself on a model in train
# mode and in eval mode, so beam_search_searches_in_eval_mode held unless it asks the scores for what a search
# gives (free points, issue 11: tests/test_free_points.py found it with a constant of -3).
def beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None):
    was_training = model.training
    model.eval()
    with torch.no_grad():  # noqa: F821
        model.encode(src, src_mask)
    model.train(was_training)
    sequences = torch.tensor([[bos_id, eos_id]] * src.shape[0])  # noqa: F821
    return sequences, torch.full((src.shape[0],), -3.0, dtype=torch.float64)  # noqa: F821


# <<< hostile
