"""The Textual UI: the only package that imports textual. It never imports torch."""
