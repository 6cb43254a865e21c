"""``python -m torchscan_tui`` is the ``torchscan-tui`` command."""

import sys

from .cli import main

sys.exit(main())
