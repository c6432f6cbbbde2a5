"""`python -m fleet.demo`: the demo, started by fleet/demo/processes.py."""

import sys

from fleet.demo.processes import main

sys.exit(main())
