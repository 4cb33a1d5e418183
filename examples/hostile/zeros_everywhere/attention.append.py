# >>> hostile
# Computes nothing (issue 11, item 7): every function returns zeros of the right shape. It must earn the shape
# properties only: NaN never equals NaN's expected number, and an invariance fails a constant output.
def softmax(x, dim=-1):
    return torch.full_like(x, 0.0)


def scaled_dot_product_attention(query, key, value, mask=None):
    lead = query.shape[:-1]
    return query.new_full((*lead, value.shape[-1]), 0.0), query.new_full((*lead, key.shape[-2]), 0.0)
# <<< hostile
