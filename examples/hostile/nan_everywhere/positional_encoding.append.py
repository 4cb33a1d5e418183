# >>> hostile
# Computes nothing (issue 11, item 7): the table and both modules' outputs are NaN of the right shape.
def sinusoidal_encoding(max_len, d_model):
    return torch.full((max_len, d_model), float("nan"))


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        return torch.full_like(x, float("nan"))


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return torch.full((*tokens.shape, self.d_model), float("nan"), dtype=self.embedding.weight.dtype)
# <<< hostile
