"""Fleet models: the inventory, and the bookings and costs that hang on it."""

from fleet.models.costs import UserBudget
from fleet.models.inventory import GPU, GPUModel, Node, OsAccount, Project

__all__ = ["GPU", "GPUModel", "Node", "OsAccount", "Project", "UserBudget"]
