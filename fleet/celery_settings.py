"""Django's settings as the Celery app's configuration, read when a worker or beat first needs it.

Reading them here, not through "django.conf:settings", lets a configuration error end a worker's
start with the same one line that manage.py and the ASGI app print, instead of a traceback.
"""

import sys

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

try:
    django_settings.INSTALLED_APPS  # noqa: B018 - reading one setting loads them all
except ImproperlyConfigured as error:
    sys.exit(f"GPU Fleet configuration error: {error}")

settings = django_settings
