"""Refuse a NUL or a lone surrogate in a path, query string or form, and a query parameter the API's schema
does not declare, before any view sees it."""

from django.http import HttpResponseBadRequest

from fleet.api.errors import json_error
from fleet.api.schema import declared_query
from fleet.api.text import first_bad_pair, text_problem

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def is_api(request) -> bool:
    return request.path_info.startswith("/api/")


class RefuseBadText:
    """400 naming the part at fault; JSON API bodies are checked by the API's parser instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        found = first_bad_pair((name, str(value)) for name, value in view_kwargs.items())
        found = found or first_bad_pair(pairs(request.GET))
        if found is None and not is_api(request) and request.content_type in FORM_TYPES:
            found = first_bad_pair(pairs(request.POST))
        if found is None and text_problem(request.path_info):
            found = ("path", text_problem(request.path_info))
        if found is None:
            return None
        field, problem = found
        message = f"{field} {problem}"
        if is_api(request):
            return json_error(400, message, {field: [f"This value {problem}"]})
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


def pairs(query_dict):
    return ((name, value) for name, values in query_dict.lists() for value in values)


class RefuseUnknownParameters:
    """An API query parameter the operation's schema does not declare is a 400 naming it, never silently
    ignored (a misspelt filter would otherwise answer an unfiltered list)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        view_class = getattr(view_func, "cls", None)
        if not is_api(request) or view_class is None or not request.GET:
            return None
        method = "GET" if request.method == "HEAD" else request.method
        actions = getattr(view_func, "actions", None) or {}
        allowed = declared_query(view_class, actions.get(method.lower()), method)
        unknown = sorted(set(request.GET) - allowed) if allowed is not None else []
        if not unknown:
            return None
        takes = ", ".join(sorted(allowed)) or "no query parameters"
        message = f"Unknown query parameter: this address takes {takes}."
        return json_error(400, f"{', '.join(unknown)}: {message}", {name: [message] for name in unknown})
