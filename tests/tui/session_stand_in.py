"""A stand-in for ssh that lasts a whole session (tests/tui/ssh_monitor_app.py).

It first does what ctrl+c does on a terminal (SIGINT to the terminal's foreground
group) and notes whether it was hit itself; then, for ``SECONDS``, it scrapes the
dashboard's /metrics and notes every snapshot time it is served, and each scrape that
got no answer. ``python session_stand_in.py METRICS_URL OUT_JSON SECONDS``
"""

import json
import os
import re
import signal
import sys
import time
import urllib.request

TAKEN = re.compile(rb"^gpufleet_snapshot_timestamp_seconds (\S+)$", re.MULTILINE)
url, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
start = time.monotonic()
reached = False
taken: list = []
unanswered = 0
try:
    # A signal a process sends to its own group is delivered before kill() returns, so
    # a hit raises here; nothing needs to wait for it.
    os.killpg(os.tcgetpgrp(0), signal.SIGINT)
except KeyboardInterrupt:
    reached = True
while time.monotonic() - start < seconds:
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=2) as answer:
            found = TAKEN.search(answer.read())
        if found and float(found.group(1)) not in taken:
            taken.append(float(found.group(1)))
    except OSError:
        unanswered += 1
    time.sleep(0.2)  # a scrape rate, not a wait for anything
report = {
    "start": start,
    "end": time.monotonic(),
    "ctrl_c_reached_session": reached,
    "taken": taken,
    "unanswered": unanswered,
}
with open(out, "w") as f:
    json.dump(report, f)
