"""What a locked-out login gets (django-axes counts the failures): a page that says when to try again, or a
JSON `detail` for the API's token endpoint. Both answer 429 Too Many Requests with Retry-After."""

from math import ceil

from axes.helpers import get_cool_off
from django.shortcuts import render

from fleet.api.errors import json_error


def lockout_message(request) -> str:
    cool_off = get_cool_off(request)
    minutes = max(1, ceil(cool_off.total_seconds() / 60))
    return (
        f"Too many failed logins: logging in is blocked for {minutes} minute{'s' if minutes != 1 else ''}"
        " for this username from your address. Try again later, or ask an admin to unlock it."
    )


def lockout_response(request, *args):
    """axes calls this with (request, response, credentials) or (request, credentials)."""
    message = lockout_message(request)
    if request.path.startswith("/api/"):
        response = json_error(429, message)
    else:
        response = render(request, "registration/locked_out.html", {"message": message}, status=429)
    response["Retry-After"] = str(int(get_cool_off(request).total_seconds()))
    response["Cache-Control"] = "no-store"
    return response
