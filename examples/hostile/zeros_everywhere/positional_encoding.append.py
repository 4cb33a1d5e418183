# >>> hostile
# Computes nothing (issue 11, item 7): the table and both modules' outputs are zeros of the right shape.
def sinusoidal_encoding(max_len, d_model):
    return torch.full((max_len, d_model), 0.0)


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        return torch.full_like(x, 0.0)


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return torch.full((*tokens.shape, self.d_model), 0.0, dtype=self.embedding.weight.dtype)
# <<< hostile
