"""Outside text on screen, the one way: never parsed as markup, never sent as controls.

Operator names, shapes, messages, paths and file contents come from workloads, files and
users. Textual parses a ``str`` given to ``Static``, ``Label``, ``Option`` or ``notify`` as
markup: ``[/opt/data] not found`` raises ``MarkupError`` and ``Optional[Tensor]`` loses its
bracket. Every such string goes through :func:`literal` (a Rich ``Text``, so no markup) after
:func:`~torchscan_tui.common.text.neutralise_controls` (ESC, C1, bidi overrides made visible), and
every notice through the app's ``notify`` (:class:`~torchscan_tui.ui.app.TorchscanApp`).
"""

from __future__ import annotations

from rich.text import Text

from torchscan_tui.common.text import neutralise_controls

# For every Input of ours (``restrict=``): text typed or pasted may hold no control or
# bidi character, which the Input would otherwise draw raw. A paste holding one is refused.
NO_CONTROLS = "[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*"


def literal(text: object, style: str = "", *, one_line: bool = False) -> Text:
    """``text`` as a renderable shown exactly as written, controls made visible;
    ``one_line``: cut with an ellipsis rather than wrapped (a table cell)."""
    if one_line:
        return Text(neutralise_controls(str(text)), style=style, no_wrap=True, overflow="ellipsis")
    return Text(neutralise_controls(str(text)), style=style)
