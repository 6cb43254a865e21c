"""The Textual UI: the only package that imports textual. It never imports torch.

Owns: the one App (:mod:`.app`) and its screens and widgets; the run as the UI sees it
(:mod:`.run_driver` takes a source's events in batches, :mod:`.run_state` is what they
built, :mod:`.last_result` what ``r`` keeps on screen); and, pure and tested without an
app, what each widget shows of the state (:mod:`.screen_figures`), which actions apply
and why not (:mod:`.action_rules`) and whose rows a multi-rank session shows
(:mod:`.rank_selection`). May import everything but the worker and the command.
"""
