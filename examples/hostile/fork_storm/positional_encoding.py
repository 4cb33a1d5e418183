"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
import torch.nn as nn

# >>> hostile
# A fork storm, bounded at 32 children that sleep 20 s (harmless even if the process limit failed).
import os
import time
for _ in range(32):
    if os.fork() == 0:
        time.sleep(20)
        os._exit(0)
# <<< hostile


def sinusoidal_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    angle = position / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model).unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)].to(x.dtype))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model

    def forward(self, tokens):
        return self.embedding(tokens) * math.sqrt(self.d_model)
