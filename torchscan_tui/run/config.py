"""What to run and how: the script, its arguments and options, and the commands for both
passes (a plain run, a step-limited one, or ranks under torch.distributed.run)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from torchscan_tui.run.distributed import rank_rss_command, torchrun


@dataclass(frozen=True)
class RunConfig:
    """What to run and how. ``script`` is made absolute so a name like ``-x.py`` is safe."""

    script: str
    args: tuple[str, ...] = ()
    callable_name: str | None = None
    device: str = "auto"
    row_limit: int | None = None
    trace_path: str | None = None
    # With no trace_path, the worker still writes a trace into the run's private
    # directory, for the app's trace export (t). A headless run says no: the directory
    # is removed when the run ends, so the trace would be written only to be deleted.
    private_trace: bool = True
    # The step window (see worker/steps.py); None: the worker's defaults.
    warmup: int | None = None
    steps: int | None = None
    run_to_end: bool = False
    flops: bool = False  # torch's with_flops in the profile (worker/profiling.py)
    call_sites: bool = True  # a step after the window traced for them (worker/call_sites.py)
    rss_steps: int | None = None  # the peak-RSS pass ends after this many steps
    nproc_per_node: int | None = None  # ranks under torch.distributed.run (run/distributed.py)
    torchrun_options: tuple[str, ...] = ()  # --nnodes, --node-rank, --rdzv-*: passed through
    python: str = sys.executable
    grace_seconds: float = 1.0

    def rss_command(self) -> list[str]:
        script = os.path.abspath(self.script)
        if self.nproc_per_node is not None:
            return rank_rss_command(self.python, self.nproc_per_node, script, self.args,
                                    self.torchrun_options, self.rss_steps)  # fmt: skip
        # The script as ``python SCRIPT ARGS`` runs it, its steps said (worker/peak_pass.py).
        stop = ["--stop-at", str(self.rss_steps)] if self.rss_steps is not None else []
        return [self.python, "-m", "torchscan_tui.worker.peak_pass", *stop, script, *self.args]

    def worker_options(self, trace_path: str | None) -> list[str]:
        """The worker's script, options and the script's arguments (all but its channel)."""
        options = [os.path.abspath(self.script), "--device", self.device]
        if self.callable_name:
            options += ["--callable", self.callable_name]
        if self.row_limit is not None:
            options += ["--row-limit", str(self.row_limit)]
        if trace_path:
            options += ["--trace", trace_path]
        if self.warmup is not None:
            options += ["--warmup", str(self.warmup)]
        if self.steps is not None:
            options += ["--steps", str(self.steps)]
        if self.run_to_end:
            options += ["--run-to-end"]
        if self.flops:
            options += ["--flops"]
        if not self.call_sites:
            options += ["--no-stack"]
        return options + ["--", *self.args]

    def worker_command(self, channel_fd: int, trace_path: str | None) -> list[str]:
        options = self.worker_options(trace_path)
        script, rest = options[0], options[1:]
        return [self.python, "-m", "torchscan_tui.worker", script,
                "--channel-fd", str(channel_fd), *rest]  # fmt: skip

    def rank_worker_command(self) -> list[str]:
        """Every rank's worker under torchrun, each writing its channel to the file the
        session made for it (named in the environment: run/handoff.py)."""
        assert self.nproc_per_node is not None
        launcher = torchrun(self.python, self.nproc_per_node, self.torchrun_options)
        return [*launcher, "-m", "torchscan_tui.worker.rank", *self.worker_options(None)]
