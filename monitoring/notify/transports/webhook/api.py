"""/api/webhooks/: a person's own webhooks."""

from rest_framework import serializers, viewsets

from fleet.api.fields import StrictTextMixin
from monitoring.notify.transports.webhook.models import Webhook


class WebhookSerializer(StrictTextMixin, serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = ["id", "name", "url", "secret", "active", "created"]
        read_only_fields = ["secret", "created"]


class WebhookViewSet(viewsets.ModelViewSet):
    """Your webhooks; the signing secret is generated and shown to you."""

    serializer_class = WebhookSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Webhook.objects.none()
        return Webhook.objects.filter(user=self.request.user)

    def perform_create(self, serializer):
        serializer.save(user=self.request.user)
