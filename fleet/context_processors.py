"""Template context shared by every page."""

NAV_ITEMS = [
    ("Fleet", "fleet:fleet"),
    ("Processes", "monitoring:processes"),
    ("Reservations", "fleet:reservations"),
    ("Runs", "training:runs"),
    ("Alerts", "monitoring:alerts"),
    ("Costs", "monitoring:costs"),
]


def navigation(request):
    return {"nav_items": NAV_ITEMS}
