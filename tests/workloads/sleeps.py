"""Never ends on its own. Writes its pid (and a grandchild's) to argv[1] first."""

import subprocess
import sys
import time

child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
)
with open(sys.argv[1], "w") as handle:
    handle.write(f"{__import__('os').getpid()} {child.pid}\n")
time.sleep(600)
