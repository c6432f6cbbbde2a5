"""The app's URLs plus two requests that do nothing, for the reservations benchmark's floor lines: what
any request through this web server costs, with no login, and with the API's token check."""

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.urls import urlpatterns as app_patterns


@login_not_required
def empty_page(request):
    return HttpResponse(b"")


class EmptyApiCall(APIView):
    """Token authentication (the API's default classes), then an empty JSON object."""

    def get(self, request):
        return Response({})


# After the app's own, so the app's requests resolve exactly as they do in production.
urlpatterns = [
    *app_patterns,
    path("bench/empty-page", empty_page),
    path("bench/empty-api-call", EmptyApiCall.as_view()),
]
