"""What the numbers mean: pure functions from profiler events to rows and views of rows.

Owns: the row vocabulary (:mod:`.records`) and its fields (:mod:`.fields`), profiler
events and their columns, Kineto's activity categories, device-time
attribution, grouping (aggregation), ranking, diagnostics, the device summary and kernel
view, filtering and sorting rows (the row view), noise rows, compare and shares, steps
(the step model, as the TensorBoard plugin draws their boundaries), interval sets, the
summaries (the plugin's step overview, HTA's device timeline) and ranks. May import
:mod:`torchscan_tui.common` only: no torch, no textual, no file formats, no runs.
"""
