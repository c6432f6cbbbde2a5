"""JSON shapes of the reservations API (validation in, bookings out)."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from fleet.api.errors import ErrorSerializer
from fleet.prebuilt_select import PrebuiltSelect
from inventory.gpu_keys import GPUKeyField, find_gpus
from inventory.models import GPU, GPUModel, Node, Project
from reservations.booking import BookingRequest

GPUS_WITH_NODE_AND_MODEL = PrebuiltSelect(GPU, key="id", joined=("node", "model"), many=True)


class GPUBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    uuid = serializers.CharField()
    node = serializers.CharField(source="node.hostname")
    index = serializers.IntegerField()
    model = serializers.CharField(source="model.name", allow_null=True, default=None)


class ReservationRowSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    gpu = GPUBriefSerializer()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    status = serializers.CharField()
    first_used_at = serializers.DateTimeField(allow_null=True)


class BookingSerializer(serializers.Serializer):
    """A booking: the GPUs booked together, one window, each GPU with its own status."""

    id = serializers.UUIDField()
    user = serializers.CharField(source="user.username")
    project = serializers.CharField(source="project.name", allow_null=True, default=None)
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    status = serializers.CharField()
    purpose = serializers.CharField()
    deadline_name = serializers.CharField()
    deadline_date = serializers.DateField(allow_null=True)
    gpu_hours = serializers.FloatField()
    first_used_at = serializers.DateTimeField(allow_null=True)
    created = serializers.DateTimeField()
    reservations = ReservationRowSerializer(source="rows", many=True)


class ConflictSerializer(serializers.Serializer):
    gpu = serializers.IntegerField(source="gpu_id")
    gpu_uuid = serializers.CharField(source="gpu.uuid")
    gpu_label = serializers.CharField(source="gpu")
    user = serializers.CharField(source="user.username")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class BookingErrorSerializer(ErrorSerializer):
    """A refused booking: the API's error shape, with the bookings in the way."""

    conflicts = ConflictSerializer(many=True, required=False)


class GPUIdsField(serializers.ListField):
    """GPU UUIDs or ids, looked up with the node and model that the reply shows (one query per kind)."""

    child = GPUKeyField()

    def to_internal_value(self, data) -> list[GPU]:
        found, missing = find_gpus(super().to_internal_value(data), GPUS_WITH_NODE_AND_MODEL.fetch)
        if missing:
            raise serializers.ValidationError(f"No GPU {', '.join(missing)}.")
        return found


class BookingCreateSerializer(serializers.Serializer):
    """Either `gpus` (UUIDs or ids), or `model` with `count`; times in ISO 8601 (with offset, or in TIME_ZONE)."""

    gpus = GPUIdsField(required=False)
    model = serializers.SlugRelatedField(slug_field="name", queryset=GPUModel.objects.all(), required=False)
    count = serializers.IntegerField(min_value=1, max_value=512, required=False)
    node = serializers.SlugRelatedField(slug_field="hostname", queryset=Node.objects.all(), required=False)
    same_node = serializers.BooleanField(default=False)
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    project = serializers.SlugRelatedField(
        slug_field="name", queryset=Project.objects.all(), required=False, allow_null=True
    )
    purpose = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    deadline_name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    deadline_date = serializers.DateField(required=False, allow_null=True)
    user = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.filter(is_active=True),
        required=False,
        help_text="Admins only: book for this researcher.",
    )
    override_quota = serializers.BooleanField(default=False, help_text="Admins only.")
    preempt = serializers.BooleanField(default=False, help_text="Admins only: preempt bookings in the way.")

    def validate(self, data):
        if not data.get("gpus") and not (data.get("model") and data.get("count")):
            raise serializers.ValidationError("Give `gpus`, or `model` and `count`.")
        if data["end"] <= data["start"]:
            raise serializers.ValidationError({"end": "The end must be after the start."})
        return data

    def booking_request(self, caller) -> BookingRequest:
        data = dict(self.validated_data)
        return BookingRequest(user=data.pop("user", None) or caller, **data)


class ChangeSerializer(serializers.Serializer):
    start = serializers.DateTimeField(required=False)
    end = serializers.DateTimeField(required=False)

    def validate(self, data):
        if not data:
            raise serializers.ValidationError("Give a new `end` (or `start` for a booking that has not started).")
        return data


class PreemptSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class HolderSerializer(serializers.Serializer):
    gpu = serializers.IntegerField(source="gpu_id")
    gpu_uuid = serializers.CharField(source="gpu.uuid")
    user = serializers.CharField(source="user.username")
    project = serializers.CharField(source="project.name", allow_null=True, default=None)
    until = serializers.DateTimeField(source="end")
    booking = serializers.UUIDField()


class FinderQuerySerializer(serializers.Serializer):
    model = serializers.SlugRelatedField(slug_field="name", queryset=GPUModel.objects.all())
    count = serializers.IntegerField(min_value=1, max_value=512)
    hours = serializers.FloatField(min_value=0.25, max_value=24 * 28)
    node = serializers.SlugRelatedField(slug_field="hostname", queryset=Node.objects.all(), required=False)
    same_node = serializers.BooleanField(default=False)


class SlotSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    gpus = GPUBriefSerializer(many=True)


class TimelineQuerySerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()

    def validate(self, data):
        if data["end"] <= data["start"]:
            raise serializers.ValidationError({"end": "The end must be after the start."})
        if (data["end"] - data["start"]).days > 62:
            raise serializers.ValidationError({"end": "Ask for at most 62 days at a time."})
        return data


class TimelineBookingSerializer(serializers.Serializer):
    booking = serializers.UUIDField()
    user = serializers.CharField(source="user.username")
    project = serializers.CharField(source="project.name", allow_null=True, default=None)
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    status = serializers.CharField()


class TimelineRowSerializer(serializers.Serializer):
    gpu = GPUBriefSerializer()
    bookings = TimelineBookingSerializer(many=True)


class UsageSerializer(serializers.Serializer):
    who = serializers.CharField()
    week_start = serializers.DateTimeField()
    booked_hours = serializers.FloatField()
    limit_hours = serializers.IntegerField(allow_null=True)


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    booking = serializers.UUIDField(source="reservation.booking")
    gpu = serializers.CharField(source="reservation.gpu")
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    os_user = serializers.CharField()
    detail = serializers.CharField()
    created = serializers.DateTimeField()
    last_seen = serializers.DateTimeField(allow_null=True)
