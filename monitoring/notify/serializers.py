"""The JSON of an in-app notification: the API and the live badge send the same thing."""

from rest_framework import serializers

from monitoring.notify.messages import headline
from monitoring.notify.models import Notification


class NotificationSerializer(serializers.ModelSerializer):
    headline = serializers.SerializerMethodField()
    reason = serializers.CharField(source="event.reason")
    event = serializers.CharField(source="event.kind")
    alert = serializers.SerializerMethodField()
    read = serializers.SerializerMethodField()

    class Meta:
        model = Notification
        fields = ["id", "created", "read", "read_at", "event", "headline", "reason", "alert", "also"]

    def get_headline(self, obj: Notification) -> str:
        return headline(obj.event, len(obj.also))

    def get_read(self, obj: Notification) -> bool:
        return obj.read_at is not None

    def get_alert(self, obj: Notification) -> dict:
        alert = obj.event.alert
        return {
            "id": alert.id,
            "kind": alert.kind,
            "severity": alert.severity,
            "status": alert.status,
            "title": alert.title,
        }
