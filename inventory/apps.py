"""The inventory as a Django app, under the label its tables and migrations were made with."""

from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    # The label its tables and migrations were made under, when the inventory lived in the project package.
    label = "fleet"
    verbose_name = "Fleet inventory"
