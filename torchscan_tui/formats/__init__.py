"""Files in and out: reports, Chrome traces, exports, and writing them without losing any.

Owns: the report schema, saving it and reading it page by page, opening any profile file,
JSON decoding limits, atomic writes, exports (CSV, JSON, Markdown), the plain-text summary,
and :mod:`.trace` (decode, turn into a report, salvage a cut file, write). May import
:mod:`torchscan_tui.analysis` and :mod:`torchscan_tui.common`; never torch, textual, a run
or the UI.
"""
