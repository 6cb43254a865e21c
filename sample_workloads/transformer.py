"""A small transformer encoder over a batch of token embeddings (inference).

The encoder is spelled out here (attention, MLP, the residual block) rather than taken
from ``nn.TransformerEncoder``, so that the by-line view (``L``) names this file's lines:
the MLP's and the attention's, as a person reading the model would.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, length, width)
        return self.out(mixed)


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, width: int = 128, heads: int = 4, hidden: int = 512):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = Attention(width, heads)
        self.mlp = MLP(width, hidden)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


torch.manual_seed(0)
encoder = nn.Sequential(Block(), Block()).eval()
tokens = torch.randn(8, 64, 128)


def workload():
    with torch.no_grad():
        for _ in range(3):
            encoder(tokens)


if __name__ == "__main__":
    workload()
    print("transformer: done")
