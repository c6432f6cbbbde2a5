"""Forms of the reservation pages; times are read in the visitor's zone and stored in UTC."""

from datetime import timedelta
from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from inventory.models import GPU, GPUModel, Node, Project
from reservations.booking import BookingRequest

LOCAL_INPUT = "%Y-%m-%dT%H:%M"


class LocalDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format=LOCAL_INPUT, **kwargs)

    def format_value(self, value):
        # A time sent with an offset (the finder's one-click booking) is shown again in the page's zone.
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value)
            except ValueError:
                parsed = None
            if parsed is not None and timezone.is_aware(parsed):
                value = timezone.localtime(parsed)
        return super().format_value(value)


class GPUChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, gpu: GPU) -> str:
        return f"{gpu.node.hostname}:{gpu.index} · {gpu.model.name if gpu.model else gpu.name or 'unknown model'}"


def zone_field() -> forms.CharField:
    return forms.CharField(widget=forms.HiddenInput, required=False)


class BookingForm(forms.Form):
    """Book specific GPUs, or k GPUs of a model (optionally on one node) that the app picks."""

    gpus = GPUChoiceField(
        queryset=GPU.objects.select_related("node", "model").order_by("node__hostname", "index"),
        required=False,
        label="These GPUs",
        help_text="Or leave empty and give a model and how many.",
    )
    model = forms.ModelChoiceField(
        queryset=GPUModel.objects.filter(gpus__isnull=False).distinct(),
        required=False,
        label="GPU model",
        empty_label="choose a model",
    )
    count = forms.IntegerField(min_value=1, max_value=512, required=False, label="How many")
    node = forms.ModelChoiceField(queryset=Node.objects.all(), required=False, label="On node", empty_label="any")
    same_node = forms.BooleanField(required=False, label="All on one node")
    start = forms.DateTimeField(widget=LocalDateTimeInput)
    end = forms.DateTimeField(widget=LocalDateTimeInput)
    project = forms.ModelChoiceField(queryset=Project.objects.none(), required=False, empty_label="none")
    purpose = forms.CharField(max_length=200, required=False)
    deadline_name = forms.CharField(max_length=100, required=False, label="Deadline")
    deadline_date = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    tz = zone_field()

    def __init__(self, *args, viewer, **kwargs):
        super().__init__(*args, **kwargs)
        self.viewer = viewer
        self.fields["project"].queryset = Project.objects.all() if viewer.is_staff else viewer.projects.all()
        self.fields["tz"].initial = timezone.get_current_timezone_name()
        if viewer.is_staff:
            self.fields["user"] = forms.ModelChoiceField(
                queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
                required=False,
                label="Book for",
                empty_label="myself",
            )
            self.fields["override_quota"] = forms.BooleanField(required=False, label="Ignore quotas (admin)")
            self.fields["preempt"] = forms.BooleanField(required=False, label="Preempt bookings in the way (admin)")

    def clean(self):
        data = super().clean()
        if not data.get("gpus") and not (data.get("model") and data.get("count")):
            raise forms.ValidationError("Choose GPUs, or a GPU model and how many.")
        if data.get("start") and data.get("end") and data["end"] <= data["start"]:
            self.add_error("end", "The end must be after the start.")
        return data

    def booking_request(self) -> BookingRequest:
        data = self.cleaned_data
        return BookingRequest(
            user=data.get("user") or self.viewer,
            start=data["start"],
            end=data["end"],
            gpus=list(data.get("gpus") or []),
            model=data.get("model"),
            count=data.get("count") or 0,
            node=data.get("node"),
            same_node=data.get("same_node", False),
            project=data.get("project"),
            purpose=data.get("purpose", ""),
            deadline_name=data.get("deadline_name", ""),
            deadline_date=data.get("deadline_date"),
            override_quota=data.get("override_quota", False),
            preempt=data.get("preempt", False),
        )


class ChangeForm(forms.Form):
    """Extend or shorten a booking: a new end, or a number of hours to add (real hours, DST or not)."""

    start = forms.DateTimeField(widget=LocalDateTimeInput, required=False)
    end = forms.DateTimeField(widget=LocalDateTimeInput, required=False)
    extend_hours = forms.DecimalField(
        required=False, min_value=Decimal("-168"), max_value=Decimal("168"), decimal_places=2
    )
    tz = zone_field()

    def __init__(self, *args, booking, **kwargs):
        super().__init__(*args, **kwargs)
        self.booking = booking
        self.fields["tz"].initial = timezone.get_current_timezone_name()

    def clean(self):
        data = super().clean()
        if data.get("extend_hours") is not None:
            data["end"] = self.booking.end + timedelta(hours=float(data["extend_hours"]))
        if not data.get("start") and not data.get("end"):
            raise forms.ValidationError("Give a new end, or hours to extend by.")
        return data


class FinderForm(forms.Form):
    """k GPUs of model M for h hours, soonest."""

    model = forms.ModelChoiceField(queryset=GPUModel.objects.filter(gpus__isnull=False).distinct(), label="GPU model")
    count = forms.IntegerField(min_value=1, max_value=512, initial=1, label="How many")
    hours = forms.DecimalField(
        min_value=Decimal("0.25"), max_value=Decimal(24 * 28), decimal_places=2, initial=4, label="For hours"
    )
    node = forms.ModelChoiceField(queryset=Node.objects.all(), required=False, label="On node", empty_label="any")
    same_node = forms.BooleanField(required=False, label="All on one node")
    purpose = forms.CharField(max_length=200, required=False)
    deadline_name = forms.CharField(max_length=100, required=False, label="Deadline")


class TimelineForm(forms.Form):
    """Which days and GPUs the timeline shows."""

    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="From")
    days = forms.TypedChoiceField(
        choices=[(1, "1 day"), (3, "3 days"), (7, "1 week"), (14, "2 weeks"), (28, "4 weeks")],
        coerce=int,
        required=False,
        initial=7,
    )
    model = forms.ModelChoiceField(
        queryset=GPUModel.objects.filter(gpus__isnull=False).distinct(), required=False, empty_label="all models"
    )
    node = forms.ModelChoiceField(queryset=Node.objects.all(), required=False, empty_label="all nodes")
    colour = forms.ChoiceField(choices=[("user", "by user"), ("project", "by project")], required=False)
