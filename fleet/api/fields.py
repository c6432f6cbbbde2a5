"""Serializer fields the API shares: text that must arrive as a JSON string (DRF's CharField turns a number
into text, so `"name": 0` would be stored as "0" while the schema says string)."""

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A CharField that refuses a number, a boolean or anything else that is not a JSON string."""

    default_error_messages = {"invalid": "Give text (a JSON string)."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictTextMixin:
    """For a ModelSerializer: its model's text columns become StrictCharFields."""

    def build_standard_field(self, field_name, model_field):
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        if field_class is serializers.CharField:
            field_class = StrictCharField
        return field_class, kwargs
