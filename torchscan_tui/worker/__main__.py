"""``python -m torchscan_tui.worker``: see :mod:`torchscan_tui.worker.main`."""

from torchscan_tui.worker.main import main
from torchscan_tui.worker.quick_exit import exit_without_teardown

exit_without_teardown(main())
