"""Issue 30, point 5: the device allocator's peak over the window beside the process's
peak RSS. No GPU here: the CUDA side is a stand-in with torch.cuda's calls (named
*_mock_gpu); the CPU side is real."""

from __future__ import annotations

from torchscan_tui.analysis.memory_timeline import device_peak_words
from torchscan_tui.ui.widgets.rss_panel import RssFigures, figures_text
from torchscan_tui.worker.device_peak import DevicePeak
from torchscan_tui.worker.profiling import profile_workload


class StandInCuda:
    """torch.cuda's peak calls, with an allocator that peaks at what the test sets."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.peak = 0

    def is_available(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.calls.append("synchronize")

    def reset_peak_memory_stats(self) -> None:
        self.calls.append("reset")
        self.peak = 0

    def max_memory_allocated(self) -> int:
        return self.peak

    def max_memory_reserved(self) -> int:
        return self.peak + 2 * 2**20


def test_the_peak_is_reset_as_the_window_opens_and_read_as_it_ends_mock_gpu():
    cuda = StandInCuda()
    peak = DevicePeak("cuda", cuda=cuda)
    cuda.peak = 10**9  # the warm-up's, before the window: reset away
    peak.window_opens()
    assert cuda.calls == ["synchronize", "reset"] and cuda.peak == 0
    cuda.peak = 3 * 2**30
    peak.window_ends()
    peak.window_ends()  # read once: a later stop keeps the window's figure
    figures = peak.figures()
    assert figures["allocated_bytes"] == 3 * 2**30
    assert figures["reserved_bytes"] == 3 * 2**30 + 2 * 2**20
    words = device_peak_words({"device_peak": figures})
    assert words == "device peak 3.0 GiB allocated, 3.0 GiB reserved (the window's)"
    shown = figures_text(RssFigures(rss={"value": 2**30, "unit": "bytes"}, pending=False,
                                    device_peak=words))  # fmt: skip
    assert "device peak 3.0 GiB allocated" in shown.plain


def test_a_cpu_run_has_no_device_peak_and_says_why():
    report = profile_workload(lambda: sum(range(10)))
    figures = report["context"]["device_peak"]
    assert figures["allocated_bytes"] is None and figures["missing"].startswith("a CPU run")
    assert device_peak_words(report["context"]) is None


def test_an_allocator_whose_statistics_fail_gives_no_figure_and_says_why_mock_gpu():
    """A torch that says CUDA is there but cannot count (this CPU build, mocked as
    having a GPU): the profile goes on; the figure is None with why."""

    class Broken(StandInCuda):
        def reset_peak_memory_stats(self) -> None:
            raise AssertionError("Torch not compiled with CUDA enabled")

    peak = DevicePeak("cuda", cuda=Broken())
    peak.window_opens()
    peak.window_ends()
    figures = peak.figures()
    assert figures["allocated_bytes"] is None
    assert figures["missing"].endswith("failed: Torch not compiled with CUDA enabled")
