import sys

from fleet.demo.processes import main

sys.exit(main())
