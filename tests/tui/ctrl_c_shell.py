"""A stand-in for ssh (tests/tui/ssh_app.py): prints, then does what ctrl+c does on a
cooked terminal (SIGINT to the terminal's foreground process group) and says when it was stopped."""

import os
import signal
import sys
import time

print("stand-in shell on", sys.argv[1], flush=True)
try:
    os.killpg(os.tcgetpgrp(0), signal.SIGINT)
    time.sleep(30)
except KeyboardInterrupt:
    print("stand-in stopped by ctrl+c", flush=True)
    sys.exit(130)
