"""Turn a configuration error into one clear line at start-up instead of a traceback."""

import os
import sys

from django.core.exceptions import ImproperlyConfigured


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
    import django

    try:
        django.setup()
    except ImproperlyConfigured as error:
        sys.exit(f"GPU Fleet configuration error: {error}")
