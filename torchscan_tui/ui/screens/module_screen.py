"""``T``: the ``nn.Module`` tree, as the TensorBoard plugin's Module view showed it: each
module's total and own CPU (and device) time, its forward's calls per step and its
largest operators; ``e`` opens a module's forward in ``$EDITOR``.

The figures are the report's ``modules`` block (:mod:`torchscan_tui.analysis.modules`);
this screen only draws them. Module and operator names are outside text: shown literally.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static, Tree

from torchscan_tui.analysis.records import ModuleNode, ModulesBlock
from torchscan_tui.analysis.sites import parse_site
from torchscan_tui.common.formatting import MISSING, counted, format_seconds
from torchscan_tui.ui.editor import open_in_editor
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.rows_screen import binding_commands

OPEN_DEPTH = 3  # the tree opens this deep: the model, its blocks, their parts
SHOWN_OPERATORS = 4


def node_label(node: ModuleNode, accent: str = "cyan") -> Text:
    """``mlp: MLP  total 24.0 ms  own 5.3 ms  1 call/step``, device times where measured."""
    text = literal(node["name"], one_line=True)
    text.stylize("bold")
    text.append(f"  total {format_seconds(node['cpu_total_seconds'])}", style=accent)
    text.append(f"  own {format_seconds(node['cpu_self_seconds'])}")
    if node["device_total_seconds"] is not None:
        text.append(f"  device {format_seconds(node['device_total_seconds'])}", style=accent)
        own = node["device_self_seconds"]
        text.append(f" (own {format_seconds(own) if own is not None else MISSING})")
    calls = node["calls"]
    if calls is not None:
        text.append(f"  {counted(calls, 'call')}/step", style="dim")
    return text


def operators_words(node: ModuleNode) -> str:
    named = list(node["operators"].items())
    if not named:
        return "no operator of its own (its time is its children's)"
    words = ", ".join(f"{name} {format_seconds(s)}" for name, s in named[:SHOWN_OPERATORS])
    if len(named) > SHOWN_OPERATORS:
        words += f" (+{len(named) - SHOWN_OPERATORS} more)"
    return f"own operators: {words}"


class ModuleScreen(Screen[None]):
    DEFAULT_CSS = """
    ModuleScreen #modules-tree { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,T,q", "close", "Back", tooltip="Back to the operators"),
        Binding("e", "open_module", "Edit", tooltip="Open the module's forward in $EDITOR"),
    ]

    def __init__(self, modules: ModulesBlock, title: str, roots: Sequence[str]):
        super().__init__()
        self.modules = modules
        self.title_words = title
        self.roots = list(roots)  # where a relative file is looked for

    def compose(self) -> ComposeResult:
        yield Static(id="modules-title")
        yield Tree("modules", id="modules-tree")
        yield Static(id="modules-status")
        yield Footer()

    def on_mount(self) -> None:
        accent = palette_of(self.app).accent
        tree: Tree[ModuleNode] = self.query_one(Tree)
        nodes = self.modules["nodes"]
        tree.show_root = False
        parents = {-1: tree.root}
        for node in nodes:
            parent = parents[node["depth"] - 1]
            branch = parent.add(node_label(node, accent), data=node)
            parents[node["depth"]] = branch
            if node["depth"] < OPEN_DEPTH:
                branch.expand()
        self._leaves_fixed()
        title = Text(" Modules ", style="bold reverse")
        title.append(f"  {self.title_words}", style="bold")
        title.append(f"\n From {self.modules['source']}.", style="dim")
        self.query_one("#modules-title", Static).update(title)
        self.say(f" {len(nodes) - 1:,} modules; enter opens or closes one, e opens its forward")
        tree.focus()

    def _leaves_fixed(self) -> None:
        """A module without children shows no arrow."""
        tree: Tree[ModuleNode] = self.query_one(Tree)
        stack = list(tree.root.children)
        while stack:
            branch = stack.pop()
            branch.allow_expand = bool(branch.children)
            stack.extend(branch.children)

    def say(self, words: str) -> None:
        self.query_one("#modules-status", Static).update(literal(words, one_line=True))

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[ModuleNode]) -> None:
        node = event.node.data
        if node is not None:
            where = node["source"] or "source not known (a module of torch's or a trace's)"
            self.say(f" {node['path']}: {operators_words(node)}; {where}")

    def action_close(self) -> None:
        self.dismiss()

    def action_open_module(self) -> None:
        tree: Tree[ModuleNode] = self.query_one(Tree)
        cursor = tree.cursor_node
        node = cursor.data if cursor is not None else None
        if node is None:
            return
        site = parse_site(node["source"]) if node["source"] else None
        if site is None:
            said: str | None = f"{node['name']}: its forward's source is not known here"
        else:
            said = open_in_editor(self.app, site[0], site[1], self.roots)
        if said:
            self.say(said)
            self.notify(said, title="Open the module", severity="warning")

    def palette_commands(self) -> Iterable[SystemCommand]:
        return binding_commands(self)
