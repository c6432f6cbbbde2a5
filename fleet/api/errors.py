"""The API's one error shape: ``{"detail": sentence, "errors": {field: [messages]}}`` for every 4xx.

`detail` is always a sentence a person can read; `errors` names the fields at fault (empty when the
error is not about a field). Booking refusals add `conflicts`. DRF's own errors (validation, 401, 403,
404, 405, 415, throttling) are reshaped by `exception_handler`, set as DRF's EXCEPTION_HANDLER.
"""

from django.db import DataError
from django.http import JsonResponse
from django.views.defaults import page_not_found
from django.views.defaults import server_error as django_server_error
from rest_framework import exceptions, serializers
from rest_framework.views import exception_handler as drf_exception_handler

from fleet.api.credentials import HOW_TO_AUTHENTICATE

NON_FIELD = "non_field_errors"


class ErrorSerializer(serializers.Serializer):
    """Every 4xx answer of the API."""

    detail = serializers.CharField(help_text="What went wrong, as a sentence.")
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per field at fault (`non_field_errors` for the request as a whole); may be empty.",
    )


def flatten(data, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error details as one list of messages per dotted field path."""
    if isinstance(data, dict):
        flat: dict[str, list[str]] = {}
        for key, value in data.items():
            if isinstance(key, int) and prefix:
                # An item of a list field (DRF keys them by position): the field is at fault, the item named.
                for path, messages in flatten(value, prefix).items():
                    flat.setdefault(path, []).extend(f"Item {key}: {message}" for message in messages)
                continue
            name = f"{prefix}.{key}" if prefix else str(key)
            for path, messages in flatten(value, name).items():
                flat.setdefault(path, []).extend(messages)
        return flat
    if isinstance(data, list):
        if all(not isinstance(item, (dict, list)) for item in data):
            return {prefix or NON_FIELD: [str(item) for item in data]} if data else {}
        flat = {}
        for index, item in enumerate(data):
            for path, messages in flatten(item, f"{prefix}.{index}" if prefix else str(index)).items():
                flat.setdefault(path, []).extend(messages)
        return flat
    return {prefix or NON_FIELD: [str(data)]}


def summary(errors: dict[str, list[str]]) -> str:
    field, messages = next(iter(errors.items()))
    first = messages[0] if field == NON_FIELD else f"{field}: {messages[0]}"
    more = sum(len(m) for m in errors.values()) - 1
    return first if not more else f"{first} (and {more} more)"


def error_body(detail, errors: dict[str, list[str]] | None = None, **extra) -> dict:
    return {"detail": str(detail), "errors": errors or {}, **extra}


def shaped(data) -> dict:
    """Any DRF error payload in the one shape."""
    if isinstance(data, dict) and set(data) >= {"detail", "errors"}:
        return data
    if isinstance(data, dict) and set(data) == {"detail"}:
        detail = data["detail"]
        if isinstance(detail, list):
            detail = " ".join(str(item) for item in detail)
        return error_body(detail)
    errors = flatten(data)
    if not errors:
        return error_body("The request is not valid.")
    return error_body(summary(errors), errors)


def exception_handler(exc, context):
    if isinstance(exc, DataError):
        # A value the database cannot hold that no serializer bounded (a number out of range, say):
        # the request is at fault, not the server.
        exc = exceptions.ValidationError({NON_FIELD: ["A value is out of the range the database can store."]})
    if isinstance(exc, exceptions.NotAuthenticated):
        said = exceptions.NotAuthenticated(f"Authentication credentials were not provided. {HOW_TO_AUTHENTICATE}")
        said.auth_header = getattr(exc, "auth_header", None)  # set by DRF: the 401's WWW-Authenticate
        exc = said
    response = drf_exception_handler(exc, context)
    if response is not None and response.status_code >= 400:
        response.data = shaped(response.data)
    return response


def json_error(status: int, detail: str, errors: dict[str, list[str]] | None = None) -> JsonResponse:
    """The same shape from plain Django code (middleware, URL handlers)."""
    return JsonResponse(error_body(detail, errors), status=status)


def not_found(request, exception=None):
    """Django's 404 handler: the error shape under /api/, the site's page elsewhere."""
    if request.path_info.startswith("/api/"):
        return json_error(404, "Not found: no endpoint or object at this address.")
    return page_not_found(request, exception)


def server_error(request):
    if request.path_info.startswith("/api/"):
        return json_error(500, "Server error: the request was not completed; it has been logged.")
    return django_server_error(request)
