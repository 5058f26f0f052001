"""``python3 -m collectors.agent``: run the node agent."""

import sys

from collectors.agent.main import main

if __name__ == "__main__":
    sys.exit(main())
