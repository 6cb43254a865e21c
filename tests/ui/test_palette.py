"""Issue 27, point 6: text drawn in Python takes its colours from the app's theme (it
named ANSI colours, which a light theme drew as yellow on white), and follows a change
of theme."""

from __future__ import annotations

from replay import replay_source

from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.palette import THEME_VARIABLES, palette_of
from torchscan_tui.ui.widgets.notes_line import NotesLine
from torchscan_tui.ui.widgets.run_header import RunHeader

NOTE = {"code": "cuda_activity_unsupported", "message": "CUDA time is unavailable."}


def styles(text) -> set[str]:
    return {str(span.style) for span in text.spans}


async def test_the_notes_and_the_header_follow_the_theme(wait):
    app = create_app(source=replay_source(diagnostics=[NOTE]), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            variables = app.get_css_variables()
            palette = palette_of(app)
            assert palette.warning == variables[THEME_VARIABLES["warning"]]
            assert f"bold {palette.warning}" in styles(app.query_one(NotesLine)._shown)
            assert f"bold {palette.success}" in styles(app.query_one(RunHeader)._shown)  # done
        assert palette_of(app).warning != "yellow"  # a theme's colour, not the ANSI name
