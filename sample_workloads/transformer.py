"""A transformer encoder over a batch of token embeddings (inference)."""

import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
tokens = torch.randn(8, 64, 128)


def workload():
    with torch.no_grad():
        for _ in range(3):
            encoder(tokens)


if __name__ == "__main__":
    workload()
    print("transformer: done")
