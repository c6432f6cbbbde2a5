"""/api/notifications/ and /api/alert-preferences/: a person's own (each destination has its API in its folder)."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.localtime import zone_named
from monitoring.notify.choices import TransportKind
from monitoring.notify.forms import PreferenceForm, quiet_hours_error
from monitoring.notify.from_events import preferences_of
from monitoring.notify.models import Notification, NotificationPreference
from monitoring.notify.serializers import NotificationSerializer
from monitoring.notify.transports import destination_kinds, destination_slug, transport_class
from monitoring.notify.transports.inapp.live import broadcast_unread, unread_count


class ReadSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, help_text="Omit to mark all read."
    )


class UnreadSerializer(serializers.Serializer):
    unread = serializers.IntegerField()


class NotificationViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Your in-app notifications, newest first, 100 a page."""

    serializer_class = NotificationSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Notification.objects.none()
        return (
            Notification.objects.filter(user=self.request.user, transport=TransportKind.IN_APP)
            .select_related("event__alert")
            .order_by("-created", "-id")
        )

    @extend_schema(request=ReadSerializer, responses=UnreadSerializer)
    @action(detail=False, methods=["post"])
    def read(self, request):
        body = ReadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        rows = self.get_queryset().filter(read_at=None)
        if "ids" in body.validated_data:
            rows = rows.filter(pk__in=body.validated_data["ids"])
        rows.update(read_at=timezone.now())
        broadcast_unread(request.user.pk)
        return Response({"unread": unread_count(request.user.pk)})


class PreferenceSerializer(serializers.ModelSerializer):
    # A string checked against the zone database, not an enum of its ~600 names (some differ only in case or sign).
    time_zone = serializers.CharField(required=False, max_length=64, help_text="An IANA zone, e.g. Europe/Berlin.")

    class Meta:
        model = NotificationPreference
        fields = PreferenceForm.Meta.fields  # what a person chooses, the same on the settings page
        validators = []  # the quiet hours are checked below, with a clearer message than the constraint's

    def validate_time_zone(self, value: str) -> str:
        if zone_named(value) is None:
            raise serializers.ValidationError(f"{value[:64]!r} is not an IANA time zone (e.g. Europe/Berlin).")
        return value

    def validate(self, data: dict) -> dict:
        start = data.get("quiet_start", getattr(self.instance, "quiet_start", None))
        end = data.get("quiet_end", getattr(self.instance, "quiet_end", None))
        error = quiet_hours_error(start, end)
        if error:
            raise serializers.ValidationError({"quiet_start": error})
        return data


class PreferenceView(APIView):
    """How you hear about alerts (in-app notifications always arrive)."""

    @extend_schema(responses=PreferenceSerializer)
    def get(self, request):
        return Response(PreferenceSerializer(preferences_of(request.user)).data)

    @extend_schema(request=PreferenceSerializer, responses=PreferenceSerializer)
    def put(self, request):
        body = PreferenceSerializer(preferences_of(request.user), data=request.data)
        body.is_valid(raise_exception=True)
        body.save(user=request.user)
        return Response(body.data)


def destination_routes() -> list[tuple[str, type, str]]:
    """(prefix, viewset, basename) of each transport's destinations: api/webhooks, named api-webhook."""
    return [
        (f"api/{destination_slug(kind)}", transport_class(kind).viewset, f"api-{kind}") for kind in destination_kinds()
    ]
