"""Noise rows: the ones a user hides with one key to see where the work is (pure).

Two kinds: ``[memory]`` rows (allocations no operator held, kind ``memory``), and
operators that only make a new view of a tensor's storage (``aten::view``,
``aten::transpose``, ...): they cost microseconds of dispatch and never a kernel, yet
a transformer's profile lists hundreds of them between the rows that matter.
"""

from __future__ import annotations

from collections.abc import Sequence

NOISE_KINDS = frozenset({"memory"})
# aten's view and alias operators (as ``torch.Tensor.is_view`` results): metadata only.
VIEW_OPERATORS = frozenset(
    f"aten::{name}"
    for name in (
        "view", "_unsafe_view", "view_as", "reshape", "reshape_as", "as_strided",
        "alias", "detach", "detach_", "lift_fresh", "t", "transpose", "permute",
        "expand", "expand_as", "squeeze", "unsqueeze", "select", "slice", "narrow",
        "unflatten", "unbind", "split", "split_with_sizes", "chunk", "diagonal",
        "movedim", "swapaxes", "resolve_conj", "resolve_neg", "_reshape_alias",
        "unfold", "numpy_T", "mT", "indices", "values",
    )
)  # fmt: skip
NOISE_DESCRIPTION = "[memory] rows and view-only operators (aten::view, transpose, ...)"


def is_noise(lowered_name: str, kind: str) -> bool:
    """Whether a row (its lower-cased operator name and kind) is noise."""
    return kind in NOISE_KINDS or lowered_name == "[memory]" or lowered_name in VIEW_OPERATORS


def without_noise(ids: Sequence[int], names: Sequence[str], kinds: Sequence[str]) -> list[int]:
    """``ids`` less the noise rows, in their order (``names`` lower-cased, by row id)."""
    return [i for i in ids if not is_noise(names[i], kinds[i])]
