"""The project shell as an app: its `runserver` command replaces Django's, and it registers project-wide lookups."""

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    name = "fleet"
    # "fleet" is the inventory's label (inventory/apps.py): its tables and migrations were made under it.
    label = "project"
    verbose_name = "GPU Fleet"

    def ready(self) -> None:
        from fleet import lookups  # noqa: F401  registers the `__any` lookup
