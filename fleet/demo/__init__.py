"""The demo: a simulated fleet with users, bookings and runs (`python -m fleet.demo`, `make demo`)."""
