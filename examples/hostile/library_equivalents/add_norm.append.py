# >>> hostile
# LayerNorm as F.group_norm with one group over the features.
from .equivalents import layer_norm_as_group_norm


class LayerNorm(LayerNorm):  # noqa: F821 - the reference's class, defined above this snippet
    def forward(self, x):
        return layer_norm_as_group_norm(x, self.weight, self.bias, self.eps)
# <<< hostile
