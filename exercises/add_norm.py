"""Layer normalisation and the residual "Add & Norm" step that follows every sub-layer.

    LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias
    AddAndNorm(x, s) = LayerNorm(x + dropout(s))

mean and the biased variance are taken over the last dim (d_model), separately for every
position; weight and bias are learned vectors of size d_model. Shapes: (..., d_model) -> (..., d_model).
"""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    """Layer normalisation over the last dim, by hand.

    Attributes:
        weight: nn.Parameter of shape (d_model,), initialised to ones.
        bias: nn.Parameter of shape (d_model,), initialised to zeros.
        eps: small constant added to the variance.
    """

    def __init__(self, d_model, eps=1e-5):
        """Args:
            d_model: size of the last dim.
            eps: small constant added to the variance.
        """
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, x):
        """y = (x - mean) / sqrt(var + eps) * weight + bias, with mean and the biased
        variance var = mean((x - mean)^2) over the last dim.

        Args:
            x: (..., d_model).

        Returns:
            Tensor of shape (..., d_model).
        """
        # YOUR CODE HERE
        raise NotImplementedError


class AddAndNorm(nn.Module):
    """Residual connection followed by layer normalisation (post-norm).

    Attributes:
        norm: LayerNorm(d_model).
        dropout: nn.Dropout applied to the sub-layer output.
    """

    def __init__(self, d_model, dropout=0.0):
        """Args:
            d_model: model width.
            dropout: dropout probability on the sub-layer output.
        """
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, x, sublayer_output):
        """out = norm(x + dropout(sublayer_output)).

        Args:
            x: the sub-layer's input, (batch, m, d_model).
            sublayer_output: the sub-layer's output, (batch, m, d_model).

        Returns:
            Tensor of shape (batch, m, d_model).
        """
        # YOUR CODE HERE
        raise NotImplementedError
