#!/usr/bin/env python
"""Django's command-line utility for GPU Fleet."""

import os
import sys

from django.core.exceptions import ImproperlyConfigured


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        sys.exit(f"GPU Fleet configuration error: {error}")


if __name__ == "__main__":
    main()
