"""The shared vocabulary every layer may use: text made safe to show, units, GC pauses.

Owns: :mod:`.text` (outside text neutralised), :mod:`.formatting` (seconds, bytes, counts as
people read them), :mod:`.gcpause` (no collector during bulk decoding), :mod:`.memory` (hand
freed memory back to the system), :mod:`.startup` (no collector while the command starts),
:mod:`.file_reads` (a span of a file held open). Imports nothing else of this package,
and neither torch nor textual.
"""
