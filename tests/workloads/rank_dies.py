"""Two ranks under torch.distributed.run; rank 1 raises at its third step."""

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(6):
        if rank == 1 and step == 2:
            raise RuntimeError("rank 1 ran out of data")
        model(torch.ones(4, 8)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
