"""Each outermost ``optimizer.step()`` of any torch.optim optimizer, as one step.

A global pre- and post-step hook (the script is not edited). A wrapper optimizer whose
``step()`` calls an inner optimizer's ``step()`` (Lookahead, ZeroRedundancyOptimizer) is
one step, not two: each thread keeps the optimizers whose ``step()`` it is inside, and a
step counts when the outermost one ends. An optimizer found on the stack again (its last
``step()`` raised, so its post-hook never ran) drops what was left above it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


def on_outermost_steps(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` after each outermost optimizer step; returns the undo."""
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    inside = threading.local()

    def stack() -> list[int]:
        if not hasattr(inside, "optimizers"):
            inside.optimizers = []
        return inside.optimizers

    def before(optimizer: object, args: object, kwargs: object) -> None:
        entered = stack()
        if id(optimizer) in entered:  # its last step raised: what was above it is stale
            del entered[entered.index(id(optimizer)) :]
        entered.append(id(optimizer))

    def after(optimizer: object, args: object, kwargs: object) -> None:
        entered = stack()
        if entered and entered[-1] == id(optimizer):
            entered.pop()
        if not entered:
            callback()

    handles = [register_optimizer_step_pre_hook(before), register_optimizer_step_post_hook(after)]

    def undo() -> None:
        for handle in handles:
            handle.remove()

    return undo
