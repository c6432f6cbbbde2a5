"""The product's top-level packages, once: the import, code-map, packaging and inline-style checks walk them."""

PACKAGES = (
    "fleet",
    "inventory",
    "accounts",
    "reservations",
    "monitoring",
    "training",
    "wire",
    "clients/fleet-cli/fleet_cli",  # the CLI's own distribution; its modules import each other relatively
)
