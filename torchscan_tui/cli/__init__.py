"""The ``torchscan-tui`` command: arguments, headless runs, and starting the app.

May import every other package; only the app itself imports textual, and only when a
terminal run needs it.
"""
