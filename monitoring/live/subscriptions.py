"""What a browser on /ws/live/ watches: the whole fleet, one node or one GPU.

A page sends {"type": "subscribe", "scope": "fleet"}, {"type": "subscribe", "scope": "node", "node": HOSTNAME}
or {"type": "subscribe", "scope": "gpu", "gpu": UUID}; it gets a snapshot of that scope, then only the
updates that touch it.
"""

from dataclasses import dataclass, replace

from rest_framework import serializers

from monitoring.live.serializers import FleetSummarySerializer
from monitoring.live.state import node_records, serialize_nodes, summarize

SCOPES = ("fleet", "node", "gpu")


class SubscribeSerializer(serializers.Serializer):
    """A browser's subscribe message."""

    type = serializers.ChoiceField(choices=["subscribe"])
    scope = serializers.ChoiceField(choices=SCOPES)
    node = serializers.CharField(required=False, max_length=253)
    gpu = serializers.CharField(required=False, max_length=96)

    def validate(self, data: dict) -> dict:
        key = data["scope"]
        if key != "fleet" and not data.get(key):
            raise serializers.ValidationError({key: f"a {key} scope needs the {key} to watch"})
        return data


class SubscriptionError(ValueError):
    pass


def first_error(errors) -> str:
    """The first validation message as one line, e.g. "scope: "rack" is not a valid choice."."""
    if isinstance(errors, dict):
        field, value = next(iter(errors.items()))
        prefix = "" if field == "non_field_errors" else f"{field}: "
        return prefix + first_error(value)
    if isinstance(errors, list):
        return first_error(errors[0])
    return str(errors)


@dataclass(frozen=True)
class Subscription:
    """One scope of the fleet and the filter for its updates."""

    scope: str
    key: str | None = None
    node: str | None = None  # the watched node's hostname, once known

    @classmethod
    def parse(cls, message) -> "Subscription":
        if not isinstance(message, dict):
            raise SubscriptionError('a message must be a JSON object such as {"type": "subscribe", "scope": "fleet"}')
        form = SubscribeSerializer(data=message)
        if not form.is_valid():
            raise SubscriptionError(first_error(form.errors))
        scope = form.validated_data["scope"]
        return cls(scope, form.validated_data.get(scope))

    def snapshot(self) -> tuple["Subscription", dict]:
        """The scope's current state from the database (call it off the event loop), and the bound subscription."""
        records = node_records(
            hostname=self.key if self.scope == "node" else None,
            gpu_uuid=self.key if self.scope == "gpu" else None,
        )
        serialized = serialize_nodes(records)
        if self.scope != "fleet" and not serialized:
            raise SubscriptionError(f"no {self.scope} {self.key!r} in the fleet")
        summary = FleetSummarySerializer(summarize(serialized)).data
        payload = {"type": "snapshot", "scope": self.scope, "key": self.key, "summary": summary, "nodes": serialized}
        return replace(self, node=serialized[0]["hostname"] if self.scope != "fleet" else None), payload

    def narrow(self, gpus: list[list], nodes: list[list]) -> tuple[list[list], list[list]]:
        """The entries of an update ([uuid, hostname, json] and [hostname, json]) that this subscription shows."""
        if self.scope == "fleet":
            return gpus, nodes
        if self.scope == "gpu":
            gpus = [entry for entry in gpus if entry[0] == self.key]
        else:
            gpus = [entry for entry in gpus if entry[1] == self.node]
        return gpus, [entry for entry in nodes if entry[0] == self.node]
