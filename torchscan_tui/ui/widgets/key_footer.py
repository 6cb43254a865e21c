"""Textual's footer, recomposed once per burst of binding changes instead of once each.

The apps show it compact (one space between keys): at 100 columns the roomy style cut
off the last four of the main screen's keys.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """The footer, with at most one recompose waiting.

    Textual's footer queues a full recompose (every key unmounted and mounted again,
    ~50 ms here) for each change of the bindings, and start-up alone makes six: the
    screen painted nothing while the queue drained behind a report's loading rows. One
    waiting recompose composes the latest bindings, so later changes need not queue
    another; a change during a recompose queues the next.
    """

    _recompose_waiting = False

    def bindings_changed(self, screen: Screen) -> None:
        if self._recompose_waiting:
            return
        super().bindings_changed(screen)
        # The footer schedules a recompose under these conditions only.
        self._recompose_waiting = bool(
            screen.app.app_focus and self.is_attached and screen is self.screen
        )

    async def recompose(self) -> None:
        self._recompose_waiting = False
        await super().recompose()
