"""The reservations JSON API under /api/reservations/ (documented in docs/api.md and at /api/schema/)."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.errors import NON_FIELD, error_body
from fleet.api.pagination import Pages, paginated
from inventory.gpu_keys import find_gpus
from inventory.models import GPU
from reservations import booking as booking_service
from reservations.finder import find_slots
from reservations.listing import as_booking, group, with_details
from reservations.listing import booking as find_booking
from reservations.models import Reservation, ReservationEvent
from reservations.quotas import usage_this_week
from reservations.serializers import (
    BookingCreateSerializer,
    BookingErrorSerializer,
    BookingSerializer,
    ChangeSerializer,
    ConflictSerializer,
    EventSerializer,
    FinderQuerySerializer,
    HolderSerializer,
    PreemptSerializer,
    SlotSerializer,
    TimelineQuerySerializer,
    TimelineRowSerializer,
    UsageSerializer,
)
from reservations.timeline import SHOWN

ERRORS = {400: BookingErrorSerializer, 403: BookingErrorSerializer}


def error(exc: booking_service.BookingError) -> Response:
    code = status.HTTP_403_FORBIDDEN if isinstance(exc, booking_service.NotAllowed) else status.HTTP_400_BAD_REQUEST
    # The one round trip names conflicting GPUs by id; the reply names them by UUID too (one query, refusals only).
    uuids = dict(GPU.objects.filter(pk__in={row.gpu_id for row in exc.conflicts}).values_list("id", "uuid"))
    for row in exc.conflicts:
        row.gpu.uuid = uuids.get(row.gpu_id, row.gpu.uuid)
    errors = {exc.field or NON_FIELD: [exc.message]}
    body = error_body(exc.message, errors, conflicts=ConflictSerializer(exc.conflicts, many=True).data)
    return Response(body, status=code)


def booking_or_404(key):
    found = find_booking(key)
    if found is None:
        raise Http404("No such booking.")
    return found


class BookingList(APIView):
    pagination_class = Pages  # read by paginated() and by the schema

    @extend_schema(
        summary="List bookings",
        description="Your bookings (ended less than 30 days ago or later). Admins: `?user=NAME` or `?user=all`.",
        parameters=[OpenApiParameter("user", str, required=False)],
        responses=BookingSerializer(many=True),
    )
    def get(self, request):
        since = timezone.now() - timedelta(days=30)
        rows = Reservation.objects.filter(end__gt=since)
        wanted = request.query_params.get("user")
        if not request.user.is_staff or not wanted:
            rows = rows.filter(user=request.user)
        elif wanted != "all":
            if not get_user_model().objects.filter(username=wanted).exists():
                raise ValidationError({"user": [f"No researcher is called {wanted}."]})
            rows = rows.filter(user__username=wanted)
        return paginated(self, request, group(with_details(rows)), BookingSerializer)

    @extend_schema(
        summary="Book GPUs",
        request=BookingCreateSerializer,
        responses={201: BookingSerializer, **ERRORS},
    )
    def post(self, request):
        serializer = BookingCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            rows = booking_service.book(serializer.booking_request(request.user), actor=request.user)
        except booking_service.BookingError as exc:
            return error(exc)
        # The rows are what was stored, with the GPUs, holder and project the reply shows: no second read.
        # Ordered as a read gives them (one window, so by GPU).
        booking = as_booking(rows[0].booking, sorted(rows, key=lambda row: row.gpu_id))
        return Response(BookingSerializer(booking).data, status=status.HTTP_201_CREATED)


class BookingDetail(APIView):
    @extend_schema(summary="One booking", responses=BookingSerializer)
    def get(self, request, booking):
        return Response(BookingSerializer(booking_or_404(booking)).data)

    @extend_schema(
        summary="Extend, shorten or move a booking",
        description="A new `end` extends or shortens it; a new `start` moves one that has not started.",
        request=ChangeSerializer,
        responses={200: BookingSerializer, **ERRORS},
    )
    def patch(self, request, booking):
        booking_or_404(booking)
        serializer = ChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            booking_service.change_window(booking, request.user, **serializer.validated_data)
        except booking_service.BookingError as exc:
            return error(exc)
        return Response(BookingSerializer(find_booking(booking)).data)

    @extend_schema(
        summary="Cancel a booking",
        description="One that has started ends now instead (the hours used still count).",
        responses={200: BookingSerializer, **ERRORS},
    )
    def delete(self, request, booking):
        booking_or_404(booking)
        try:
            booking_service.cancel(booking, request.user)
        except booking_service.BookingError as exc:
            return error(exc)
        return Response(BookingSerializer(find_booking(booking)).data)


class Preempt(APIView):
    @extend_schema(
        summary="Preempt a booking (admins)",
        request=PreemptSerializer,
        responses={200: BookingSerializer, **ERRORS},
    )
    def post(self, request, booking):
        booking_or_404(booking)
        serializer = PreemptSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            booking_service.preempt(booking, request.user, serializer.validated_data["reason"])
        except booking_service.BookingError as exc:
            return error(exc)
        return Response(BookingSerializer(find_booking(booking)).data)


class Holders(APIView):
    pagination_class = Pages

    @extend_schema(
        summary="Who holds each GPU now, and until when",
        parameters=[
            OpenApiParameter("gpu", str, many=True, required=False, description="GPU UUIDs (or ids); all if none.")
        ],
        responses=HolderSerializer(many=True),
    )
    def get(self, request):
        keys = request.query_params.getlist("gpu")
        gpus, missing = find_gpus(keys)
        if missing:
            raise ValidationError({"gpu": [f"No GPU {', '.join(missing)}."]})
        holders = booking_service.current_holders([gpu.id for gpu in gpus] if keys else None)
        return paginated(self, request, [reservation for _, reservation in holders.values()], HolderSerializer)


class Find(APIView):
    pagination_class = Pages

    @extend_schema(
        summary="The soonest windows with k GPUs of a model free for h hours",
        parameters=[FinderQuerySerializer],
        responses=SlotSerializer(many=True),
    )
    def get(self, request):
        query = FinderQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        slots = find_slots(
            q["model"], q["count"], q["hours"], timezone.now(), q.get("node"), q["same_node"], user=request.user
        )
        return paginated(self, request, slots, SlotSerializer)


class TimelineView(APIView):
    pagination_class = Pages

    @extend_schema(
        summary="Every GPU with its bookings between two times",
        parameters=[TimelineQuerySerializer],
        responses=TimelineRowSerializer(many=True),
    )
    def get(self, request):
        query = TimelineQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["start"], query.validated_data["end"]
        gpus = list(GPU.objects.select_related("node", "model").order_by("node__hostname", "index"))
        rows = {gpu.id: {"gpu": gpu, "bookings": []} for gpu in gpus}
        found = Reservation.objects.filter(status__in=SHOWN, start__lt=end, end__gt=start)
        for row in found.select_related("user", "project").order_by("start"):
            rows[row.gpu_id]["bookings"].append(row)
        return paginated(self, request, list(rows.values()), TimelineRowSerializer)


class Quota(APIView):
    pagination_class = Pages

    @extend_schema(summary="Your GPU-hours this week against the limits", responses=UsageSerializer(many=True))
    def get(self, request):
        return paginated(self, request, usage_this_week(request.user, timezone.now()), UsageSerializer)


class Events(APIView):
    pagination_class = Pages

    @extend_schema(
        summary="What happened to your bookings (preempted, released, squatting, changed by an admin)",
        responses=EventSerializer(many=True),
    )
    def get(self, request):
        events = ReservationEvent.objects.filter(Q(user=request.user) | Q(actor=request.user))
        events = events.select_related("reservation__gpu__node", "actor").order_by("-created", "-id")
        return paginated(self, request, events, EventSerializer)
