"""Every list of the API comes in pages: ``{"count", "next", "previous", "results"}``, ``?limit=&offset=``."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from fleet.api.text import WHOLE_MAX, whole_number


class Pages(LimitOffsetPagination):
    """100 a page by default, at most 1000 (a larger limit gives 1000); a limit or offset that is not a whole
    number, or is larger than the schema's maximum, is a 400."""

    default_limit = 100
    max_limit = 1000

    def get_limit(self, request) -> int:
        limit = self.whole(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request) -> int:
        return self.whole(request, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            minimum = 1 if parameter["name"] == self.limit_query_param else 0
            parameter["schema"] = {**parameter["schema"], "minimum": minimum, "maximum": WHOLE_MAX}
        return parameters

    @staticmethod
    def whole(request, name: str, minimum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        value = whole_number(raw)
        if value is None or value < minimum:
            raise ValidationError({name: [f"Give a whole number from {minimum} to {WHOLE_MAX}."]})
        return value


def paginated(view, request, rows, serializer_class, **serializer_kwargs) -> Response:
    """One page of ``rows`` (a queryset or a list) from a plain APIView, in the same shape as the viewsets'."""
    pages = getattr(view, "pagination_class", Pages)()
    page = pages.paginate_queryset(rows, request, view=view)
    return pages.get_paginated_response(serializer_class(page, many=True, **serializer_kwargs).data)
