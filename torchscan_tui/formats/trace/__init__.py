"""Chrome-trace JSON (Kineto's ``trace.json``): decode, read as a report, salvage, write."""
