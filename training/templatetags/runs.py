"""Numbers on run pages: N/A for what was never reported, never a zero."""

from django import template

register = template.Library()


@register.filter
def percent(value, digits: int = 1) -> str:
    if value is None or value == "":
        return "N/A"
    return f"{float(value) * 100:.{int(digits)}f} %"


@register.filter
def number(value, digits: int = 4) -> str:
    """A measurement to ``digits`` significant digits."""
    if value is None or value == "":
        return "N/A"
    return f"{float(value):.{int(digits)}g}"


@register.filter
def usd(value) -> str:
    if value is None or value == "":
        return "N/A"
    return f"${value:,.2f}"


@register.filter
def duration(seconds) -> str:
    if seconds is None:
        return "N/A"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"
