"""Reservation fixtures (defined in tests/support/reservations.py)."""

from tests.support.reservations import fleet_gpus  # noqa: F401
