"""A stand-in for ssh (tests/tui/ssh_app.py): prints, then does what ctrl+c does on a
cooked terminal (SIGINT to the terminal's foreground process group) and says when it was stopped."""

import os
import signal
import sys

print("stand-in shell on", sys.argv[1], flush=True)
# The SIGINT this process sends its own group is held pending, then taken by the wait:
# the stand-in ends on the signal itself, or after 30 s without one.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
os.killpg(os.tcgetpgrp(0), signal.SIGINT)
if signal.sigtimedwait({signal.SIGINT}, 30) is not None:
    print("stand-in stopped by ctrl+c", flush=True)
    sys.exit(130)
