"""How burn-in records and a GPU's health look in the JSON API."""

from rest_framework import serializers

from monitoring.health.history import MEMORY_COUNTERS
from monitoring.health.models import BurnIn


class BurnInSerializer(serializers.ModelSerializer):
    gpu = serializers.CharField(source="gpu.uuid", help_text="The GPU's UUID.")

    class Meta:
        model = BurnIn
        fields = [
            "id",
            "gpu",
            "run",
            "started_at",
            "finished_at",
            "passed",
            "reason",
            "device",
            "size",
            "iterations",
            "gflops",
            "datasheet_gflops",
            "fraction_of_peak",
            "mismatches",
            "worst_error_ratio",
            "peak_temp_c",
            "peak_power_w",
            "peak_sm_clock_mhz",
            "lowest_sm_clock_mhz",
            "peak_mem_clock_mhz",
            "samples",
        ]


class XidEventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    errors = serializers.IntegerField(help_text="How many arrived since the reading before.")
    code = serializers.IntegerField(help_text="The XID code of the latest one.")


class MemoryChangeSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    # A plain string, not an enum: a second choice set named "metric" (sweeps have one) would rename both in the schema.
    metric = serializers.CharField(help_text=f"One of: {', '.join(MEMORY_COUNTERS)}.")
    previous = serializers.IntegerField()
    value = serializers.IntegerField()


class GPUHealthSerializer(serializers.Serializer):
    gpu = serializers.CharField(help_text="The GPU's UUID.")
    since = serializers.DateTimeField(help_text="Start of the history: `days` before now.")
    problems = serializers.ListField(child=serializers.CharField(), help_text="Why it needs a look; empty if none.")
    memory = serializers.DictField(
        child=serializers.IntegerField(allow_null=True),
        help_text="Latest ECC, retired-page and remapped-row counters and flags; null where NVML cannot read them.",
    )
    last_burnin = BurnInSerializer(allow_null=True, help_text="The latest burn-in with a verdict (one that finished).")
    xid_events = XidEventSerializer(many=True)
    memory_changes = MemoryChangeSerializer(many=True)
