# >>> hostile
# LayerNorm from the helper module, which runs F.layer_norm with the Python dispatch key excluded.
from .fastpath import layer_norm_unseen


class LayerNorm(LayerNorm):  # noqa: F821 - the reference's class, defined above this snippet
    def forward(self, x):
        return layer_norm_unseen(x, self.weight, self.bias, self.eps)
# <<< hostile
