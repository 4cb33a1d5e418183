"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        # >>> hostile
        # Sleep for an hour: killed at the call's time limit.
        import time
        time.sleep(3600)
        # <<< hostile
        return self.linear_2(self.dropout(self.linear_1(x).relu()))
