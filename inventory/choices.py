"""Choices of the inventory, with labels and colours, so templates never hard-code a colour."""

from django.db import models


class NodeStatus(models.TextChoices):
    ONLINE = "online", "Online"
    OFFLINE = "offline", "Offline"
    DRAINING = "draining", "Draining"

    @property
    def colour(self) -> str:
        return NODE_STATUS_COLOURS[self]


NODE_STATUS_COLOURS = {
    NodeStatus.ONLINE: "green",
    NodeStatus.OFFLINE: "grey",
    NodeStatus.DRAINING: "amber",
}
