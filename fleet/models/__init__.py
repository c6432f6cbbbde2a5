"""Fleet models: the inventory, and the bookings and costs that hang on it."""

from fleet.models.api_tokens import ApiToken
from fleet.models.costs import UserBudget
from fleet.models.inventory import GPU, GPUModel, Node, NvLinkState, OsAccount, Project
from fleet.reservations.models import CalendarFeed, DeadlineWindow, QuotaPolicy, Reservation, ReservationEvent

__all__ = [
    "ApiToken",
    "GPU",
    "CalendarFeed",
    "DeadlineWindow",
    "GPUModel",
    "Node",
    "NvLinkState",
    "OsAccount",
    "Project",
    "QuotaPolicy",
    "Reservation",
    "ReservationEvent",
    "UserBudget",
]
