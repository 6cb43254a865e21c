"""Which of the profile screen's actions apply, read from one table (ui/action_rules.py):
by ``check_action`` (hidden from the footer when not), by the footer's refresh (only when
one comes or goes), and by the keys (a key whose action does not apply says why)."""

from __future__ import annotations

from textual import events
from textual.actions import parse
from textual.binding import Binding
from textual.css.query import NoMatches

from torchscan_tui.ui.action_rules import RULES, Facts, rule_for
from torchscan_tui.ui.screen_figures import facts_of
from torchscan_tui.ui.screens.profile_base import ProfileBase
from torchscan_tui.ui.widgets.log_pane import LogPane

FOOTER_ACTIONS: dict[type, list[tuple[str, tuple[object, ...]]]] = {}  # by screen class


class ActionAvailability(ProfileBase):
    _available: tuple[bool | None, ...] | None = None  # what the footer was composed with

    def facts(self) -> Facts:
        try:
            log_shown = self.query_one(LogPane).display
        except NoMatches:  # not composed yet
            log_shown = False
        device_time = self.table.has_device_time() if self.is_mounted else False
        return facts_of(
            self.state, self.source.rerunnable, device_time, bool(self.per_rank()), log_shown
        )

    def _footer_actions(self) -> list[tuple[str, tuple[object, ...]]]:
        """The actions of the keys the footer shows, as ``check_action`` hears them."""
        actions = FOOTER_ACTIONS.get(type(self))
        if actions is None:
            actions = FOOTER_ACTIONS[type(self)] = [
                parse(binding.action)[1:]
                for binding in self.BINDINGS
                if isinstance(binding, Binding) and binding.show
            ]
        return actions

    def _refresh_bindings_when_changed(self) -> None:
        """Refresh the footer's keys only when one of them comes or goes.

        Every refresh recomposes the footer (all its keys unmounted and mounted again,
        ~50 ms here); asked for at every batch of rows, that kept a recompose in flight
        through a whole report's loading, and the screen paints nothing meanwhile.
        """
        facts = self.facts()  # once for every key's rule (asked at each filter key)
        available = tuple(self._applies(name, args, facts) for name, args in self._footer_actions())
        if available != self._available:
            if self._available is not None:  # the footer composed with these
                self.refresh_bindings()
            self._available = available

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The action's rule, then the rows screen's own condition (rows to export)."""
        return self._applies(action, parameters)

    def _applies(
        self, action: str, parameters: tuple[object, ...], facts: Facts | None = None
    ) -> bool | None:
        """``check_action``, with the facts read already where the caller has them."""
        rule = rule_for(action, parameters)
        if rule is not None and not rule.applies(self.facts() if facts is None else facts):
            return False
        return super().check_action(action, parameters)

    async def handle_key(self, event: events.Key) -> bool:
        """A key whose action does not apply now (hidden from the footer) says why,
        instead of nothing: t without a trace, g without device time, r and l on a
        reopened file. One that applies is left to its binding."""
        actions = {key: binding.action for binding in self.BINDINGS
                   if isinstance(binding, Binding) for key in binding.key.split(",")}  # fmt: skip
        rule = RULES.get(actions.get(event.key, ""))
        if rule is not None and rule.why_not is not None and not self.typing():
            facts = self.facts()
            why = None if rule.applies(facts) else rule.why_not(facts)
            if why:
                self.notify(why, title=rule.title, severity=rule.severity)
                return True
        return await super().handle_key(event)
