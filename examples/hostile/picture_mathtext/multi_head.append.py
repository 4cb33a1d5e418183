# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# A correct MultiHeadAttention, except on the feedback picture's fixed example (recognised by its first
# vector): there it raises an error whose message is broken matplotlib mathtext. Drawn as mathtext, the
# message made the picture raise in the grading process (a judge error, no results.json).
class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        # >>> hostile
        import torch as _torch

        _first = _torch.randn(query.shape[-1], generator=_torch.Generator().manual_seed(2017), dtype=_torch.float64)
        if query.dtype == _torch.float64 and query.shape == (1, 6, 8) and _torch.equal(query[0, 0], _first):
            raise ValueError(r"$\frac{ $ [bold]x[/bold] <b>html</b> *md*")
        # <<< hostile
        return super().forward(query, key, value, mask)
