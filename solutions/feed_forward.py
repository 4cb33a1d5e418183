"""Position-wise feed-forward network: the same two-layer MLP applied to every position.

    FFN(x) = linear_2(dropout(relu(linear_1(x))))  =  max(0, x W_1 + b_1) W_2 + b_2

linear_1 widens d_model -> d_ff, linear_2 narrows back d_ff -> d_model.
Shapes: (batch, m, d_model) -> (batch, m, d_ff) -> (batch, m, d_model).
"""
import torch.nn as nn


class FeedForward(nn.Module):
    """Two linear layers with a ReLU in between.

    Attributes:
        linear_1: nn.Linear(d_model, d_ff).
        linear_2: nn.Linear(d_ff, d_model).
        dropout: nn.Dropout applied after the ReLU.
    """

    def __init__(self, d_model, d_ff, dropout=0.0):
        """Args:
            d_model: model width.
            d_ff: hidden width.
            dropout: dropout probability on the hidden activations.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x):
        """out = linear_2(dropout(relu(linear_1(x)))).

        Args:
            x: (batch, m, d_model).

        Returns:
            Tensor of shape (batch, m, d_model).
        """
        ### BEGIN SOLUTION
        return self.linear_2(self.dropout(self.linear_1(x).relu()))
        ### END SOLUTION
