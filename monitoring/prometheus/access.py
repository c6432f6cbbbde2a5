"""Who may scrape: a bearer token equal to METRICS_TOKEN, or a staff session."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from monitoring.prometheus.exposition import CONTENT_TYPE


def refuse(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read the metrics; otherwise the 401 or 403 to answer."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if settings.METRICS_TOKEN and scheme.lower() == "bearer":
        if hmac.compare_digest(token.strip().encode(), settings.METRICS_TOKEN.encode()):
            return None
        return unauthorized("wrong bearer token")
    if request.user.is_authenticated:
        return None if request.user.is_staff else HttpResponse("Staff only.\n", status=403, content_type=CONTENT_TYPE)
    return unauthorized("send Authorization: Bearer <METRICS_TOKEN>" if settings.METRICS_TOKEN else "staff login only")


def unauthorized(why: str) -> HttpResponse:
    response = HttpResponse(f"Unauthorized: {why}.\n", status=401, content_type=CONTENT_TYPE)
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response
