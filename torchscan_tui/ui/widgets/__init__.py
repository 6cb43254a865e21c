"""The app's widgets, one module each."""
