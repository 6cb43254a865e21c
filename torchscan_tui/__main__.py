"""``python -m torchscan_tui`` is the ``torchscan-tui`` command."""

import sys

from torchscan_tui.cli import main

sys.exit(main())
