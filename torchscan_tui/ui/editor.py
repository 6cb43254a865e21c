"""Open a source line in the user's editor (``$VISUAL``, else ``$EDITOR``), the app
suspended meanwhile and restored after, as ``git`` and ``crontab`` do.

Editors take a line three ways: ``+N file`` (vi, vim, nvim, emacs, nano, kakoune, joe:
the common one, and the default), ``-g file:N`` (VS Code and its forks), ``file:N``
(Sublime Text, Zed, Helix, micro). The file of a call site is as the profile named it,
often relative (``train.py(54)``): it is looked for as given, then beside the profile
and in the working directory.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

GOTO_FLAG = frozenset({"code", "code-insiders", "codium", "cursor", "windsurf"})
FILE_COLON_LINE = frozenset({"subl", "sublime_text", "zed", "hx", "helix", "micro"})


def chosen_editor(environ: Mapping[str, str]) -> str | None:
    return environ.get("VISUAL") or environ.get("EDITOR") or None


def editor_command(editor: str, path: str, line: int) -> list[str]:
    """The command that opens ``path`` at ``line`` in ``editor`` (its words as the shell
    would split them: ``code --wait``)."""
    words = shlex.split(editor)
    name = os.path.basename(words[0]) if words else ""
    if name in GOTO_FLAG:
        return [*words, "-g", f"{path}:{line}"]
    if name in FILE_COLON_LINE:
        return [*words, f"{path}:{line}"]
    return [*words, f"+{line}", path]


def find_source(file: str, roots: Sequence[str | os.PathLike[str]]) -> Path | None:
    """``file`` as given when it exists, else under the first of ``roots`` that has it;
    None when none does (the profile came from another machine, the file moved)."""
    given = Path(file).expanduser()
    candidates = [given] if given.is_absolute() else [Path(root) / given for root in roots]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None


def open_in_editor(
    app: Any, file: str | None, line: int | None, roots: Sequence[str]
) -> str | None:
    """Open ``file`` at ``line`` in the user's editor, the Textual ``app`` suspended
    meanwhile; what went wrong, in one line, if anything."""
    from textual.app import SuspendNotSupported

    if file is None or line is None:
        return "not a file and line"
    editor = chosen_editor(os.environ)
    if editor is None:
        return "No editor: set $VISUAL or $EDITOR (export EDITOR=vim)"
    path = find_source(file, roots)
    if path is None:
        return f"{file}: not found here (looked beside the profile and in {os.getcwd()})"
    command = editor_command(editor, str(path), line)
    try:
        with app.suspend():
            done = subprocess.run(command, check=False)
    except SuspendNotSupported:
        return "This terminal cannot hand itself to an editor (no suspend here)"
    except OSError as exc:
        return f"{command[0]}: {exc.strerror or exc}"
    app.refresh()
    return None if done.returncode == 0 else f"{command[0]} exited with status {done.returncode}"
