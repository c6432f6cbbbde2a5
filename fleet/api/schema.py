"""The served schema declares the one error shape on every operation, for every 4xx it can answer."""

from drf_spectacular.openapi import AutoSchema
from rest_framework.permissions import AllowAny

from fleet.api.errors import ErrorSerializer

# Why each status can come back (the description clients show next to it).
ERROR_REASONS = {
    "400": "The request is not valid: `errors` names the fields at fault.",
    "401": "No valid credentials (a session or `Authorization: Token …`).",
    "403": "Logged in, but not allowed to do this.",
    "404": "No such object (in the path or named by the request), or not one you may see.",
    "415": "The body is not JSON.",
    "429": "Too many attempts: wait for the time `Retry-After` gives.",
}


class FleetAutoSchema(AutoSchema):
    """drf-spectacular's schema, with the errors each operation can answer declared in the one shape."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in self.error_codes():
            if code not in responses:
                responses[code] = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                responses[code]["description"] = ERROR_REASONS[code]
        return responses

    def error_codes(self) -> list[str]:
        codes = ["400"]  # every operation: a NUL or a lone surrogate in any parameter is refused
        if not any(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            codes += ["401", "403"]
        codes.append("404")  # an object in the path, or one a body names (a GPU, a process), may not exist
        if self.method in ("POST", "PUT", "PATCH"):
            codes.append("415")
        return codes + list(getattr(self.view, "error_codes", ()))
