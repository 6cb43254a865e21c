"""Textual's footer: the most used keys first, as many as fit, recomposed once per burst.

The apps show it compact (one space between keys). Keys are ordered by how often a user
reaches for them (:data:`KEY_PRIORITY`) and those that do not fit the width are left out
whole, rather than the row running off the edge cut mid-word (``space Selec`` at 80
columns) under the palette key; every key stays in help (``?``) and the palette.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

# Actions by how often they are used, most first; any other after these, in the screen's
# order. "activate" is the table's enter (details).
KEY_PRIORITY = (
    "focus_filter", "help", "sort('cpu')", "sort('delta')", "sort('device')",
    "toggle_select", "export_rows", "quit", "activate", "dismiss_screen", "back",
    "stop_peak", "cancel_run",  # while a run goes: how to end it, before the views
)  # fmt: skip
PALETTE_CLASS = "-command-palette"


def key_width(key: Widget) -> int:
    """The cells a compact footer key takes: ``c CPU`` and the space after it."""
    display = getattr(key, "key_display", "") or ""
    description = getattr(key, "description", "") or ""
    return cell_len(display) + (1 + cell_len(description) if description else 0) + 1


def priority(key: Widget) -> int:
    action = getattr(key, "action", "")
    return KEY_PRIORITY.index(action) if action in KEY_PRIORITY else len(KEY_PRIORITY)


def fitting_keys(keys: list[Widget], width: int) -> list[Widget]:
    """The keys to show in ``width`` cells: by priority, each whole or not at all."""
    shown, used = [], 0
    for key in sorted(keys, key=priority):  # stable: equal priorities keep their order
        need = key_width(key)
        if used + need <= width:
            shown.append(key)
            used += need
    return shown


class KeyFooter(Footer):
    """The footer, the most used keys first and only whole ones, with at most one
    recompose waiting, and none for the keys it shows already.

    Textual's footer queues a full recompose (every key unmounted and mounted again,
    ~50 ms here) for each change of the bindings, and start-up alone makes six: the
    screen painted nothing while the queue drained behind a report's loading rows. One
    waiting recompose composes the latest bindings, so later changes need not queue
    another; a change during a recompose queues the next.
    """

    _recompose_waiting = False
    _composed_width = 0
    _composed_keys: object = None  # what the keys were composed from (see recompose)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        palette = [widget for widget in widgets if widget.has_class(PALETTE_CLASS)]
        keys = [widget for widget in widgets if widget not in palette]
        width = self.size.width
        self._composed_width = width
        if width:  # 0 before the first layout: all keys, until the resize recomposes
            width -= sum(key_width(widget) + 2 for widget in palette)  # its border and pad
            keys = fitting_keys(keys, width)
        else:
            keys.sort(key=priority)
        yield from keys
        yield from palette

    def on_resize(self) -> None:
        if self.size.width != self._composed_width and not self._recompose_waiting:
            self._recompose_waiting = True
            self.call_after_refresh(self.recompose)

    def bindings_changed(self, screen: Screen) -> None:
        if self._recompose_waiting:
            return
        super().bindings_changed(screen)
        # The footer schedules a recompose under these conditions only.
        self._recompose_waiting = bool(
            screen.app.app_focus and self.is_attached and screen is self.screen
        )

    async def recompose(self) -> None:
        """Compose the keys again, unless they would be the ones shown: Textual refreshes
        the bindings twice for one change of focus (``/`` alone recomposed twice), and
        the screen once more at the first character typed after it, each ~10 ms of the
        UI thread for the same keys."""
        self._recompose_waiting = False
        keys = self._keys_to_compose()
        if keys is not None and keys == self._composed_keys:
            return
        self._composed_keys = keys
        await super().recompose()

    def _keys_to_compose(self) -> tuple[object, ...] | None:
        """What :meth:`compose` would make the keys of; None before the bindings are."""
        if not self._bindings_ready:
            return None
        shown = tuple(
            (binding.key, binding.action, binding.description, enabled, tooltip)
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )
        return (self.size.width, shown)
