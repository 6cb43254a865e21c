"""The app's widgets, one module each: the operator table (and the compare table on it),
header, notes line, RSS panel, filter bar, status line, detail and log panes, footer."""
