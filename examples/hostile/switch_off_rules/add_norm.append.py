# >>> hostile
import pkgutil

pkgutil.resolve_name(__name__.rpartition(".")[0] + ".switch")


class LayerNorm(LayerNorm):  # noqa: F821 - the reference's class, defined above this snippet
    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)  # noqa: F821


# <<< hostile
