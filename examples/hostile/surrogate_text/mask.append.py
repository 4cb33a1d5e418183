# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Lone surrogates (text no UTF-8 encoder takes) in a print, in an exception message and in a value returned:
# the same text a file name decoded with surrogateescape carries by accident. Every write of it used to raise
# UnicodeEncodeError outside any handler, and the whole class had no results and no gradebook.
_causal = causal_mask


def causal_mask(size, device=None):
    # >>> hostile
    print("\udcff lone surrogate \ud800")
    if size == 1:
        raise ValueError("\udcff in an exception message \udfff")
    # <<< hostile
    return _causal(size, device)
