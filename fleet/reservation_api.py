"""The reservations JSON API under /api/reservations/ (documented in docs/api.md and at /api/schema/)."""

from datetime import timedelta

from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet import booking as booking_service
from fleet.booking_list import as_booking, group, with_details
from fleet.booking_list import booking as find_booking
from fleet.finder import find_slots
from fleet.models import GPU, Reservation, ReservationEvent
from fleet.quotas import usage_this_week
from fleet.reservation_serializers import (
    BookingCreateSerializer,
    BookingSerializer,
    ChangeSerializer,
    ConflictSerializer,
    ErrorSerializer,
    EventSerializer,
    FinderQuerySerializer,
    HolderSerializer,
    PreemptSerializer,
    SlotSerializer,
    TimelineQuerySerializer,
    TimelineRowSerializer,
    UsageSerializer,
)
from fleet.timeline import SHOWN

ERRORS = {400: ErrorSerializer, 403: ErrorSerializer}


def error(exc: booking_service.BookingError) -> Response:
    code = status.HTTP_403_FORBIDDEN if isinstance(exc, booking_service.NotAllowed) else status.HTTP_400_BAD_REQUEST
    body = {"detail": exc.message, "field": exc.field, "conflicts": ConflictSerializer(exc.conflicts, many=True).data}
    return Response(body, status=code)


def booking_or_404(key):
    found = find_booking(key)
    if found is None:
        raise Http404("No such booking.")
    return found


class BookingList(APIView):
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
            rows = rows.filter(user__username=wanted)
        return Response(BookingSerializer(group(with_details(rows)), many=True).data)

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
    @extend_schema(
        summary="Who holds each GPU now, and until when",
        parameters=[OpenApiParameter("gpu", int, many=True, required=False, description="GPU ids; all if none.")],
        responses=HolderSerializer(many=True),
    )
    def get(self, request):
        ids = request.query_params.getlist("gpu")
        if any(not i.isdigit() for i in ids):
            return Response({"detail": "`gpu` takes GPU ids (whole numbers)."}, status=400)
        holders = booking_service.current_holders([int(i) for i in ids] if ids else None)
        rows = [reservation for _, reservation in holders.values()]
        return Response(HolderSerializer(rows, many=True).data)


class Find(APIView):
    @extend_schema(
        summary="The soonest windows with k GPUs of a model free for h hours",
        parameters=[FinderQuerySerializer],
        responses=SlotSerializer(many=True),
    )
    def get(self, request):
        query = FinderQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        slots = find_slots(q["model"], q["count"], q["hours"], timezone.now(), q.get("node"), q["same_node"])
        return Response(SlotSerializer(slots, many=True).data)


class TimelineView(APIView):
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
        return Response(TimelineRowSerializer(rows.values(), many=True).data)


class Quota(APIView):
    @extend_schema(summary="Your GPU-hours this week against the limits", responses=UsageSerializer(many=True))
    def get(self, request):
        return Response(UsageSerializer(usage_this_week(request.user, timezone.now()), many=True).data)


class Events(APIView):
    @extend_schema(
        summary="What happened to your bookings (preempted, released, squatting, changed by an admin)",
        responses=EventSerializer(many=True),
    )
    def get(self, request):
        events = ReservationEvent.objects.filter(Q(user=request.user) | Q(actor=request.user))
        events = events.select_related("reservation__gpu__node", "actor")[:100]
        return Response(EventSerializer(events, many=True).data)
