"""The app's screens: the profile screen (a run or a reopened file; its views, exports
and key rules in modules of their own), compare and the trace picker, on the rows-screen
base; and the screens they open: help, chart, kernel view, step overview, rank picker,
export dialog."""
