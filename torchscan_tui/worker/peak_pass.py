"""``python -m torchscan_tui.worker.peak_pass [--stop-at K] SCRIPT [ARGS]``: the peak-RSS
pass of a training script, run as ``python SCRIPT ARGS`` would run it, its steps said.

The pass runs after the profile, unprofiled: its step times are the clean ones (the spec
asks for latency measured without the profiler), and the session must know how far it
got when it is stopped (a key, ``--timeout``). Each outermost step of any torch.optim
optimizer (``optimizer_steps``) appends a line ``K SECONDS`` to the file the session made
for it (``peak.steps``): the step's number and when it ended, in seconds since this
process started. The script's own ``import torch`` is timed as it happens (a line
``import torch STARTED SECONDS``): the largest part of many scripts' start-up (36% of a
nanoGPT run, by py-spy), which the profile's window never sees. With ``--stop-at K`` the
pass ends at its K-th step, after a last line ``stopped K``, at once and with status 0
(``os._exit``, from whatever thread stepped: an exception could be swallowed by a script
that catches ``BaseException``).

Nothing heavy is imported before the script: the step hook is installed when the script
itself imports torch (an import hook waits for ``torch.optim.optimizer``), so the kernel's
peak is the script's own, plus this small module. A script without a torch.optim
optimizer writes nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import time
from collections.abc import Callable

from torchscan_tui.run.rank_files import PEAK_STEPS, open_handoff
from torchscan_tui.worker.quick_exit import exit_now

OPTIMIZER_MODULE = "torch.optim.optimizer"
TORCH = "torch"
STARTED = time.monotonic()


def _write(fd: int | None, text: str) -> None:
    if fd is not None:
        try:
            os.write(fd, text.encode())
        except OSError:
            pass  # the workload closed or replaced it: the session reads what came


def step_counter(fd: int | None, stop_at: int | None) -> Callable[[], None]:
    """What each outermost step does: say it, and end the process at ``stop_at``."""
    steps = 0

    def counted() -> None:
        nonlocal steps
        steps += 1
        _write(fd, f"{steps} {time.monotonic() - STARTED:.6f}\n")
        if steps == stop_at:
            _write(fd, f"stopped {steps}\n")
            exit_now(0)

    return counted


class _AroundImport(importlib.abc.MetaPathFinder):
    """Calls ``before()`` as module ``name`` starts loading and ``then()`` once it has
    loaded, and leaves the import system as it found it."""

    def __init__(
        self, name: str, then: Callable[[], None], before: Callable[[], None] = lambda: None
    ) -> None:
        self.name, self.then, self.before = name, then, before

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the finder protocol
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module
        before, then = self.before, self.then

        def exec_module(module):  # noqa: ANN001
            before()
            load(module)
            then()

        spec.loader.exec_module = exec_module
        return spec


def hook_steps_when_torch_loads(callback: Callable[[], None]) -> None:
    def install() -> None:
        from torchscan_tui.worker.optimizer_steps import on_outermost_steps

        on_outermost_steps(callback)

    if OPTIMIZER_MODULE in sys.modules:
        install()
    else:
        sys.meta_path.insert(0, _AroundImport(OPTIMIZER_MODULE, install))


def time_torch_import(fd: int | None) -> None:
    """Say how long the script's ``import torch`` took, once it is done."""
    if TORCH in sys.modules:
        return
    began: list[float] = []

    def before() -> None:
        began.append(time.monotonic())

    def then() -> None:
        if began:
            start = began[0] - STARTED
            _write(fd, f"import torch {start:.6f} {time.monotonic() - began[0]:.6f}\n")

    sys.meta_path.insert(0, _AroundImport(TORCH, then, before))


def run_script(script: str, args: list[str]) -> None:
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as ``python SCRIPT`` has it
    runpy.run_path(script, run_name="__main__")


def main(argv: list[str]) -> None:
    stop_at = None
    if argv[:1] == ["--stop-at"]:
        stop_at, argv = int(argv[1]), argv[2:]
    script, *args = argv
    try:
        fd: int | None = open_handoff(PEAK_STEPS)
    except OSError:
        fd = None  # run by hand: nobody to tell
    hook_steps_when_torch_loads(step_counter(fd, stop_at))
    time_torch_import(fd)
    run_script(script, args)


if __name__ == "__main__":
    main(sys.argv[1:])
