"""The colours of text drawn in Python, by role, from the app's theme.

Textual CSS takes theme variables (``$warning``); text built with Rich in Python (the
header, the notes line, the peak panel, charts, the detail pane) named ANSI colours, 27
of them, which ignored the theme: a light theme drew yellow on white. Each role here is
one theme variable; a widget asks :func:`palette_of` its app and hands the palette down to
the pure function that draws (attributes down), and :class:`ThemedWidget` redraws when the
theme changes. :data:`ANSI` is the palette without an app (tests of the pure functions,
headless text).

The step overview's categories keep colours of their own: six categories need six hues
a theme does not name, and each is a letter as well, so they read without colour.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from textual.app import App

# Each role and the theme variable it takes (Textual's text-* variables: legible on the
# theme's own background).
THEME_VARIABLES = {
    "accent": "text-primary",
    "success": "text-success",
    "warning": "text-warning",
    "error": "text-error",
    "memory": "text-accent",
}


@dataclass(frozen=True)
class Palette:
    """A Rich colour for each role of text."""

    accent: str = "cyan"  # names and what is running
    success: str = "green"
    warning: str = "yellow"
    error: str = "red"
    memory: str = "magenta"  # the peak RSS and its curve


ANSI = Palette()
_BY_THEME: dict[tuple[int, str], Palette] = {}


def palette_of(app: App[Any]) -> Palette:
    """The palette of ``app``'s current theme (worked out once per theme)."""
    key = (id(app), app.theme)
    palette = _BY_THEME.get(key)
    if palette is None:
        variables = app.get_css_variables()
        palette = Palette(**{
            role.name: variables.get(THEME_VARIABLES[role.name]) or getattr(ANSI, role.name)
            for role in fields(Palette)
        })  # fmt: skip
        _BY_THEME[key] = palette
    return palette


class ThemedWidget:
    """A mixin for widgets that draw themed text: :meth:`redraw` runs again when the app's
    theme changes (subscribe in ``on_mount``)."""

    app: App[Any]

    @property
    def palette(self) -> Palette:
        return palette_of(self.app)

    def follow_theme(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda theme: self.redraw())  # type: ignore[arg-type]

    def redraw(self) -> None:
        """Draw again with the current theme's palette."""
