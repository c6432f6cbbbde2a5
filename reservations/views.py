"""Reservation pages: the timeline, booking, the finder, my bookings, one booking, and the calendar feed."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from fleet.localtime import in_local_time
from inventory.models import GPU
from reservations import booking as booking_service
from reservations.finder import find_slots
from reservations.forms import BookingForm, ChangeForm, FinderForm, TimelineForm
from reservations.ical import calendar, feed_owner, issue_feed_token
from reservations.listing import booking as find_booking
from reservations.listing import bookings_of, group, with_details
from reservations.models import DeadlineWindow, Reservation, ReservationEvent
from reservations.quotas import usage_this_week
from reservations.timeline import build_timeline


@in_local_time
def timeline(request):
    form = TimelineForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    first_day = filters.get("start") or timezone.localdate()
    days = filters.get("days") or 7
    gpus = GPU.objects.all()
    if filters.get("model"):
        gpus = gpus.filter(model=filters["model"])
    if filters.get("node"):
        gpus = gpus.filter(node=filters["node"])
    colour_by = filters.get("colour") or "user"
    board = build_timeline(first_day, days, request.user, colour_by, gpus)
    context = {"form": form, "timeline": board, "days": days, "colour_by": colour_by, "tab": "timeline"}
    context |= {"earlier": first_day - timedelta(days=days), "later": first_day + timedelta(days=days)}
    return render(request, "reservations/timeline.html", context, status=400 if form.errors else 200)


def booking_initial(query) -> dict:
    """Prefill from the timeline (a GPU and a start); else the next full hour, for four hours."""
    next_hour = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    initial = {"start": next_hour, "end": next_hour + timedelta(hours=4)}
    if query.get("gpu", "").isdigit():
        initial["gpus"] = [int(query["gpu"])]
    start = parse_local(query.get("start"))
    if start:
        initial["start"], initial["end"] = start, start + timedelta(hours=4)
    return initial


def parse_local(text: str | None):
    """An ISO time from a link: with an offset as given, without one in the page's zone."""
    try:
        moment = parse_datetime(text or "")
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment) if not timezone_gap(moment) else None
    return moment


def timezone_gap(moment) -> bool:
    aware = timezone.make_aware(moment)
    return timezone.make_naive(aware) != moment


@in_local_time
def book(request):
    form = BookingForm(request.POST or None, viewer=request.user, initial=booking_initial(request.GET))
    if request.method == "POST" and form.is_valid():
        try:
            rows = booking_service.book(form.booking_request(), actor=request.user)
        except booking_service.NotAllowed as exc:
            return HttpResponseForbidden(exc.message)
        except booking_service.BookingError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, f"Booked {len(rows)} GPU(s): {', '.join(str(r.gpu) for r in rows)}.")
            return redirect("fleet:booking", booking=rows[0].booking)
    context = {"form": form, "tab": "book", "deadlines": upcoming_deadlines()}
    return render(request, "reservations/book.html", context, status=400 if form.errors else 200)


def upcoming_deadlines():
    return DeadlineWindow.objects.filter(deadline__gt=timezone.now()).order_by("deadline")[:10]


@in_local_time
def find(request):
    form = FinderForm(request.GET or None)
    slots = None
    if form.is_valid():
        data = form.cleaned_data
        hours = float(data["hours"])
        slots = find_slots(
            data["model"], data["count"], hours, timezone.now(), data["node"], data["same_node"], user=request.user
        )
    context = {"form": form, "slots": slots, "tab": "find", "deadlines": upcoming_deadlines()}
    return render(request, "reservations/find.html", context, status=400 if form.errors else 200)


@in_local_time
def mine(request):
    now = timezone.now()
    bookings = bookings_of(request.user)
    context = {
        "current": [b for b in bookings if b.end > now and b.active_rows],
        "past": [b for b in reversed(bookings) if not (b.end > now and b.active_rows)],
        "usage": usage_this_week(request.user, now),
        "events": ReservationEvent.objects.filter(user=request.user).select_related("reservation__gpu__node")[:20],
        "has_feed": hasattr(request.user, "calendar_feed"),
        "tab": "mine",
    }
    return render(request, "reservations/mine.html", context)


def get_booking(key):
    found = find_booking(key)
    if found is None:
        raise Http404("No such booking.")
    return found


def may_change(user, found) -> bool:
    return user.is_staff or found.user.pk == user.pk


@in_local_time
def booking_detail(request, booking):
    found = get_booking(booking)
    context = {
        "booking": found,
        "change_form": ChangeForm(booking=found, initial={"end": found.end}),
        "may_change": may_change(request.user, found) and bool(found.active_rows),
        "events": ReservationEvent.objects.filter(reservation__booking=booking).select_related("actor")[:20],
        "tab": "mine",
    }
    return render(request, "reservations/booking.html", context)


@require_POST
@in_local_time
def change(request, booking):
    found = get_booking(booking)
    if not may_change(request.user, found):
        return HttpResponseForbidden("You may only change your own bookings.")
    form = ChangeForm(request.POST, booking=found)
    if form.is_valid():
        data = form.cleaned_data
        try:
            booking_service.change_window(booking, request.user, start=data.get("start"), end=data.get("end"))
        except booking_service.BookingError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, "Booking changed.")
            return redirect("fleet:booking", booking=booking)
    context = {"booking": found, "change_form": form, "may_change": True, "tab": "mine", "events": []}
    return render(request, "reservations/booking.html", context, status=400)


@require_POST
def cancel(request, booking):
    found = get_booking(booking)
    if not may_change(request.user, found):
        return HttpResponseForbidden("You may only cancel your own bookings.")
    try:
        booking_service.cancel(booking, request.user)
    except booking_service.BookingError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Booking cancelled; GPUs already in use end now.")
    return redirect("fleet:booking", booking=booking)


@require_POST
def preempt(request, booking):
    if not request.user.is_staff:
        return HttpResponseForbidden("Only admins may preempt bookings.")
    get_booking(booking)
    try:
        booking_service.preempt(booking, request.user, request.POST.get("reason", "").strip()[:500])
    except booking_service.BookingError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Booking preempted; the holder is told.")
    return redirect("fleet:booking", booking=booking)


@require_POST
def new_calendar_address(request):
    token = issue_feed_token(request.user)
    url = request.build_absolute_uri(reverse("fleet:ical", kwargs={"token": token}))
    messages.success(request, f"Your calendar address (shown once; keep it secret): {url}")
    return redirect("fleet:my-reservations")


@login_not_required
@never_cache
def ical_feed(request, token):
    owner = feed_owner(token)
    if owner is None:
        return HttpResponse("Unknown calendar address.", status=404, content_type="text/plain")
    since = timezone.now() - timedelta(days=60)
    bookings = group(with_details(Reservation.objects.filter(user=owner, end__gt=since)))
    body = calendar(bookings, owner.get_username(), timezone.now())
    return HttpResponse(body, content_type="text/calendar; charset=utf-8")
