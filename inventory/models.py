"""The inventory: GPU models and their specs, nodes, GPUs, projects and who is who on the nodes."""

from django.conf import settings
from django.db import models

from inventory.choices import NodeStatus


class GPUModel(models.Model):
    """A GPU product with its datasheet figures and a default price per GPU-hour."""

    name = models.CharField(max_length=100, unique=True)
    memory_gib = models.PositiveIntegerField()
    memory_bandwidth_gb_s = models.PositiveIntegerField()
    fp32_tflops = models.FloatField()
    tf32_tflops = models.FloatField(null=True, blank=True, help_text="Dense; empty where the GPU has no TF32.")
    bf16_tflops = models.FloatField(null=True, blank=True, help_text="Dense; empty where the GPU has no BF16.")
    fp16_tflops = models.FloatField(help_text="Dense tensor-core figure where the GPU has tensor cores.")
    tdp_w = models.PositiveIntegerField()
    interconnect = models.CharField(max_length=100, help_text="e.g. NVLink 4 (900 GB/s), PCIe 4.0 x16")
    cost_per_gpu_hour = models.DecimalField(max_digits=8, decimal_places=3, help_text="Default price, USD.")
    nvml_names = models.CharField(
        max_length=300, blank=True, help_text="Comma-separated names NVML reports for this model."
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "GPU model"

    def __str__(self) -> str:
        return self.name


class Node(models.Model):
    """A GPU server that runs an agent and a node worker."""

    hostname = models.CharField(max_length=253, unique=True)
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.OFFLINE)
    last_seen = models.DateTimeField(null=True, blank=True)
    token_hash = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    token_created = models.DateTimeField(null=True, blank=True, editable=False)
    cpu_count = models.PositiveIntegerField(null=True, blank=True)
    memory_mib = models.PositiveBigIntegerField(null=True, blank=True)
    driver_version = models.CharField(max_length=64, blank=True)
    cuda_version = models.CharField(max_length=64, blank=True)
    agent_version = models.CharField(max_length=64, blank=True)
    boot_id = models.CharField(max_length=64, blank=True)
    labels = models.JSONField(default=list, blank=True, help_text='A list of words, e.g. ["rack-3", "nvlink"].')
    cost_per_gpu_hour = models.DecimalField(
        max_digits=8, decimal_places=3, null=True, blank=True, help_text="Overrides the GPU model's price."
    )

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return self.hostname


class GPU(models.Model):
    """One physical GPU (or MIG instance), keyed by its UUID; telemetry keeps its latest state (GPUState)."""

    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=96, unique=True)
    model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, related_name="gpus", null=True, blank=True)
    name = models.CharField(max_length=100, blank=True, help_text="The name NVML reports.")
    memory_total_mib = models.PositiveIntegerField(null=True, blank=True)
    power_limit_w = models.FloatField(null=True, blank=True)
    pcie_gen = models.PositiveSmallIntegerField(null=True, blank=True)
    pcie_width = models.PositiveSmallIntegerField(null=True, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True, help_text="PCI address, e.g. 00000000:3B:00.0.")
    mig = models.BooleanField(default=False)

    class Meta:
        ordering = ["node__hostname", "index"]
        verbose_name = "GPU"
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_unique_index_per_node")]

    def __str__(self) -> str:
        return f"{self.node.hostname}:{self.index}"


class Project(models.Model):
    """A research project: members share a budget and booking quotas."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="projects", blank=True)
    monthly_budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, help_text="USD per calendar month."
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(monthly_budget__isnull=True) | models.Q(monthly_budget__gte=0),
                name="project_budget_not_negative",
                violation_error_message="A budget cannot be below zero.",
            )
        ]

    def __str__(self) -> str:
        return self.name


class OsAccount(models.Model):
    """An OS username on the nodes and the researcher it belongs to, so GPU processes get owners."""

    username = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="os_accounts")

    class Meta:
        ordering = ["username"]
        verbose_name = "OS account"

    def __str__(self) -> str:
        return f"{self.username} → {self.user}"
