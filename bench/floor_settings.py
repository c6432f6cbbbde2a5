"""The app's settings with bench/floor_urls.py as the URL configuration (see that module)."""

from fleet.settings import *  # noqa: F403

ROOT_URLCONF = "floor_urls"
