"""The row vocabulary, written once: what an operator row, a kernel row, a note and the
summaries above the rows hold.

Rows and summaries are made here in :mod:`torchscan_tui.analysis` (ranking, the device
summary, the per-step figures, the overview, the rank view), so their types live here
too; :mod:`torchscan_tui.formats.report_schema` checks files from outside against the
same ``TypedDict``s, and the channel's decoder does too. Fields not listed are kept as
they are. Every name a row's ``kind`` may take is :data:`RowKind`; the filter's
``kind:`` words and the detail pane's labels derive from it.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, get_args

# An input shape: a tensor's dims, a scalar's [], a TensorList's list of dims (2 deep),
# and one level more for safety. Deeper nesting is no shape a profiler writes.
Shape = list[int | list[int | list[int | list[int]]]]

RowKind = Literal["operator", "runtime", "annotation", "memory", "unattributed"]
ROW_KINDS: tuple[str, ...] = get_args(RowKind)


class Note(TypedDict):
    code: str
    message: str


class _RowRequired(TypedDict):
    operator: str
    input_shapes: list[Shape]
    calls: int
    cpu_self_seconds: float
    device_self_seconds: float | None
    cpu_net_bytes: int


class _StepSpreadRequired(TypedDict):
    min: float
    median: float
    max: float
    steps: int


class StepSpread(_StepSpreadRequired, total=False):
    """A row's CPU self time per step over a window (see analysis/step_summary.py)."""

    mean: float


class CrossRank(TypedDict):
    """A figure on every rank of a multi-rank session (see :mod:`.ranks`)."""

    min: float
    median: float
    max: float
    spread: float
    slowest_rank: int
    seconds: dict[str, float]  # by rank, as text (JSON keys)


class _SiteRowRequired(TypedDict):
    site: str  # "train.py(54): <module>"
    cpu_self_seconds: float
    share: float | None  # of the row's CPU self time


class SiteRow(_SiteRowRequired, total=False):
    """One call site of a row (:mod:`.sites`): the innermost frame in the user's files
    and the row's CPU self time spent from there."""

    stack: str  # the Python stack of its largest part, innermost first, ";"-joined


class ModuleNode(TypedDict):
    """One module of the module tree (:mod:`.modules`), depth first."""

    path: str  # its name after its parents', "/"-joined; "(step)" for the root
    name: str
    source: str | None  # its forward's site, "file(line): forward", where known
    depth: int
    calls: int | None  # its forward's calls in the ranged step
    cpu_self_seconds: float
    cpu_total_seconds: float
    device_self_seconds: float | None
    device_total_seconds: float | None
    operators: dict[str, float]  # its own ops' CPU self seconds, largest first


class ModulesBlock(TypedDict):
    """The report's ``modules`` block: where the tree came from, and its nodes."""

    source: str
    nodes: list[ModuleNode]


class LineRow(TypedDict):
    """One source line of the by-line view (:func:`.sites.by_line`)."""

    site: str
    file: str | None
    line: int | None
    function: str | None
    cpu_self_seconds: float
    # the rows' device self time by the same shares (a row's calls have equal shapes);
    # None where no row's was measured
    device_self_seconds: float | None
    operators: dict[str, float]  # each operator's CPU self time from this line


class Row(_RowRequired, total=False):
    """One operator row (see :mod:`torchscan_tui.analysis.ranking`)."""

    kind: RowKind
    cpu_total_seconds: float  # inclusive: the op's children counted too
    device_total_seconds: float | None
    flops: int | None  # as torch counts them (with_flops); None: none counted
    flops_per_second: float | None  # FLOPs over the inclusive time (ranking.achieved_flops)
    sites: list[SiteRow]  # where it was called from, where stacks were recorded
    callers: dict[str, int]
    diagnostics: list[Note]
    cpu_self_seconds_per_step: StepSpread
    rank: int  # a live torchrun job's row, tagged with the rank that sent it
    ranks: CrossRank  # a cross-rank row: its CPU self time on every rank


class _KernelRequired(TypedDict):
    kernel: str
    operator: str
    calls: int
    total_seconds: float
    mean_seconds: float
    min_seconds: float
    max_seconds: float


class KernelRow(_KernelRequired, total=False):
    """One row of the kernel view (see :mod:`torchscan_tui.analysis.device_summary`)."""

    activity: str
    direction: str | None
    ranks: CrossRank  # the cross-rank kernel view: total time on every rank


# A compare's rows (see .compare).

Presence = Literal["both", "only_before", "only_after"]


class Delta(TypedDict):
    """One figure on both sides of a compare (None where a side lacks it)."""

    before: float | None
    after: float | None
    delta: float | None
    ratio: float | None


class SpreadsBothSides(TypedDict):
    before: StepSpread | None
    after: StepSpread | None


class _CompareRowRequired(TypedDict):
    operator: str
    input_shapes: list[Shape]
    kind: RowKind
    presence: Presence
    cpu_self_seconds: Delta
    device_self_seconds: Delta
    calls: Delta


class CompareRow(_CompareRowRequired, total=False):
    """One row of a compare: the same (operator, shapes, kind) before and after."""

    cpu_self_seconds_per_step: SpreadsBothSides
    merged_shapes: dict[str, int | None]  # by side: the shapes an operator-only row merged


# The summaries (see .overview, .device_timeline, .ranks).


class OverviewCategory(TypedDict):
    name: str
    label: str


class _OverviewStepRequired(TypedDict):
    seconds: float


class OverviewStep(_OverviewStepRequired, total=False):
    """One step's split: its length and each category's seconds (they add up to it)."""

    name: str
    kernel: float
    memcpy: float
    memset: float
    communication: float
    runtime: float
    dataloader: float
    cpu: float
    other: float


class Advice(TypedDict):
    code: str
    text: str
    because: str


class DeviceTimeline(TypedDict):
    """HTA's temporal breakdown of the device timeline."""

    span_seconds: float
    idle_seconds: float
    compute_seconds: float
    non_compute_seconds: float
    idle_share: float | None
    compute_share: float | None
    non_compute_share: float | None
    communication_seconds: float
    comm_comp_overlap: float | None


class CollectiveStarts(TypedDict):
    starts: list[float | None]  # when its last run starts in each step, as a share of it
    durations: list[float | None]


class HeldAtPeak(TypedDict):
    """Allocations made in the window and still held at the allocator's peak, by the op
    and shapes that made them (:mod:`.memory_timeline`)."""

    operator: str
    input_shapes: list
    size: int  # each allocation's
    bytes: int  # all of them
    count: int


class DeviceMemory(TypedDict):
    """One allocator over the window (:func:`.memory_timeline.memory_block`)."""

    device: str
    start_total_bytes: int
    peak_bytes: int  # above the window's start
    peak_total_bytes: int
    peak_seconds: float
    peak_step: str | None
    peak_operator: str | None
    final_bytes: int
    allocations: int
    timeline: list[list[float]]  # [seconds into the window, bytes above its start]
    held_at_peak: list[HeldAtPeak]
    held_known: bool  # False: the allocations carry no pointers (a trace before 2022)


class CategoryMemory(TypedDict):
    """One device's memory by category over a step (:mod:`.memory_categories`)."""

    device: str
    categories: list[str]  # the order of every list of bytes below
    peak_bytes: int  # every category's bytes together, at their highest in the step
    peak_seconds: float  # when, from the step's first record
    at_peak: list[int]  # each category's bytes then
    largest: list[int]  # each category's highest in the step
    timeline: list[list[Any]]  # [seconds, [bytes by category]], thinned, the peak kept


class MemoryCategories(TypedDict, total=False):
    """Memory by category, as torch's memory profiler classifies it, or why there is none."""

    source: str
    devices: list[CategoryMemory]
    missing: str


class _MemoryBlockRequired(TypedDict):
    devices: list[DeviceMemory]


class MemoryBlock(_MemoryBlockRequired, total=False):
    categories: MemoryCategories
    steps: list[list[Any]]  # [name, seconds into the window]: each step's start


class Overview(TypedDict, total=False):
    """The step overview and the summaries beside it (a report's ``overview``)."""

    categories: list[OverviewCategory]
    steps: list[OverviewStep]
    shares: dict[str, float | None]
    source: str
    dropped_steps: list[str]
    device_utilization: float | None
    recommendations: list[Advice]
    device_timeline: DeviceTimeline | None
    collective_starts: dict[str, CollectiveStarts]


class Straggler(TypedDict):
    """The straggler verdict (see :func:`.ranks.straggler`)."""

    rank: int | None
    slowest_rank: int
    gap: float
    threshold: float
    step_spread: float | None
    measure: str
    slowest_seconds: float
    median_seconds: float
    per: str
    operator: str | None


class CollectiveEvidence(TypedDict):
    kernel: str
    starts: dict[str, float]
    latest_rank: int


class _RankSummaryRequired(TypedDict):
    rank: int
    rows: int
    host_cpu_self_seconds: float
    host_collective_seconds: float
    host_compute_seconds: float


class RankFigures(_RankSummaryRequired, total=False):
    """One rank's figures (see :func:`.ranks.rank_summary`)."""

    compute_per_step: list[float]
    compute_measure: str
    device_timeline: DeviceTimeline | None
    collective_starts: dict[str, CollectiveStarts]
    kernels: list[KernelRow]
    source: str
    peak_rss: float | None
    step_seconds_median: float | None


class RankSummary(RankFigures):
    """One rank of a multi-rank session's ``ranks`` block: its figures and its own rows
    (what R shows)."""

    operators: list[Row]


class Ranks(TypedDict, total=False):
    """A multi-rank session's ``ranks`` block."""

    world_size: int
    straggler: Straggler | None
    collective_evidence: CollectiveEvidence | None
    per_rank: list[RankSummary]


__all__ = [
    "ROW_KINDS",
    "Advice",
    "CollectiveEvidence",
    "CollectiveStarts",
    "CompareRow",
    "Delta",
    "Presence",
    "SpreadsBothSides",
    "CrossRank",
    "DeviceTimeline",
    "KernelRow",
    "Note",
    "Overview",
    "OverviewCategory",
    "OverviewStep",
    "RankFigures",
    "RankSummary",
    "Ranks",
    "Row",
    "RowKind",
    "Shape",
    "StepSpread",
    "Straggler",
]
