"""The served schema declares the one error shape on every operation, for every 4xx it can answer."""

import threading

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from rest_framework.fields import CharField
from rest_framework.permissions import AllowAny

from fleet.api.errors import ErrorSerializer

# Why each status can come back (the description clients show next to it).
ERROR_REASONS = {
    "400": "The request is not valid: `errors` names the fields at fault.",
    "401": "No valid credentials (a session, or `Authorization: Bearer …` or `Token …`).",
    "403": "Logged in, but not allowed to do this.",
    "404": "No such object (in the path or named by the request), or not one you may see.",
    "415": "The body is not JSON.",
    "429": "Too many attempts: wait for the time `Retry-After` gives.",
}


# The query parameters each operation declares, keyed by (view class, viewset action, method): filled as the
# schema is generated, read by fleet/api/middleware.py to refuse the ones it does not declare.
DECLARED_QUERY: dict[tuple[type, str | None, str], frozenset[str]] = {}
_GENERATING = threading.Lock()


class FleetAutoSchema(AutoSchema):
    """drf-spectacular's schema, with the errors each operation can answer declared in the one shape."""

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation:
            names = frozenset(p["name"] for p in operation.get("parameters", []) if p["in"] == "query")
            key = (type(self.view), getattr(self.view, "action", None), self.method)
            DECLARED_QUERY[key] = DECLARED_QUERY.get(key, frozenset()) | names
        return operation

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in self.error_codes():
            if code not in responses:
                responses[code] = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                responses[code]["description"] = ERROR_REASONS[code]
        return responses

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        # DRF refuses "" for a CharField without allow_blank; say so, or a client sends "" and gets a 400.
        if isinstance(field, CharField) and not field.allow_blank and schema.get("type") == "string":
            if not field.read_only and "minLength" not in schema and "enum" not in schema:
                schema["minLength"] = 1
        return schema

    def error_codes(self) -> list[str]:
        codes = ["400"]  # every operation: a NUL or a lone surrogate in any parameter is refused
        if not any(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            codes += ["401", "403"]
        codes.append("404")  # an object in the path, or one a body names (a GPU, a process), may not exist
        if self.method in ("POST", "PUT", "PATCH"):
            codes.append("415")
        return codes + list(getattr(self.view, "error_codes", ()))


class TokenSchemes(OpenApiAuthenticationExtension):
    """The API token, sent as `Bearer <key>` or as `Token <key>`: either one is enough (two security
    requirements, not one requirement naming both)."""

    target_class = "accounts.authentication.TokenAuthentication"
    name = ["bearerAuth", "tokenAuth"]

    def get_security_definition(self, auto_schema) -> list[dict]:
        bearer = {"type": "http", "scheme": "bearer", "description": "An API token: `Authorization: Bearer <key>`."}
        token = {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "The same API token with DRF's word: `Authorization: Token <key>`.",
        }
        return [bearer, token]

    def get_security_requirement(self, auto_schema) -> list[dict]:
        return [{name: []} for name in self.name]


def declared_query(view_class: type, action: str | None, method: str) -> frozenset[str] | None:
    """The query parameters an operation declares; None for one the schema leaves out (not checked)."""
    if not DECLARED_QUERY:
        with _GENERATING:
            if not DECLARED_QUERY:
                SchemaGenerator().get_schema(request=None, public=True)
    return DECLARED_QUERY.get((view_class, action, method))
