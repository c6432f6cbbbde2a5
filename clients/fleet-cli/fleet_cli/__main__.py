"""`python -m fleet_cli`, the same as the `fleet` command."""

from .main import main

raise SystemExit(main())
