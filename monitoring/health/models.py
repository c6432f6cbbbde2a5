"""One GPU's burn-in result: speed against its datasheet, the result check, and what the GPU reached."""

from django.db import models

from inventory.models import GPU

# A record's verdict for people: its label and badge colour. No verdict (None): the burn-in did not finish.
VERDICTS = {True: ("passed", "succeeded"), False: ("failed", "failed"), None: ("did not finish", "cancelled")}


class BurnInQuerySet(models.QuerySet):
    def judged(self) -> "BurnInQuerySet":
        """Records with a verdict: burn-ins that ran to their end (one that did not finish is neither pass nor fail)."""
        return self.exclude(passed=None)


class BurnIn(models.Model):
    """A GPU's health record from one burn-in run; kept after the run and its raw telemetry are gone."""

    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="burnins")
    run = models.ForeignKey("training.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="burnins")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(help_text="When the burn-in ended: the record's date.")
    device = models.CharField(max_length=32, blank=True, help_text="Where it multiplied: cuda:N, or cpu.")
    size = models.PositiveIntegerField(null=True, blank=True, help_text="Matrix size.")
    iterations = models.PositiveIntegerField(null=True, blank=True)
    gflops = models.FloatField(null=True, blank=True, help_text="Measured float32 matrix-multiply GFLOP/s.")
    datasheet_gflops = models.FloatField(
        null=True, blank=True, help_text="The GPU model's FP32 datasheet figure; empty for an unknown model."
    )
    fraction_of_peak = models.FloatField(
        null=True, blank=True, help_text="gflops / datasheet_gflops; empty when not measured on the GPU."
    )
    mismatches = models.PositiveBigIntegerField(null=True, blank=True, help_text="Elements the check refused.")
    worst_error_ratio = models.FloatField(null=True, blank=True, help_text="Largest error / allowed bound.")
    passed = models.BooleanField(null=True, blank=True, help_text="Empty when the burn-in did not finish: no verdict.")
    reason = models.TextField(blank=True, help_text="Why it failed or did not finish, or what was not judged.")
    # The GPU's own telemetry over the burn-in; NULL when its agent reported nothing then.
    peak_temp_c = models.FloatField(null=True, blank=True)
    peak_power_w = models.FloatField(null=True, blank=True)
    peak_sm_clock_mhz = models.FloatField(null=True, blank=True)
    lowest_sm_clock_mhz = models.FloatField(null=True, blank=True, help_text="A low clock under load: throttling.")
    peak_mem_clock_mhz = models.FloatField(null=True, blank=True)
    samples = models.PositiveIntegerField(default=0, help_text="Telemetry samples the peaks come from.")

    objects = BurnInQuerySet.as_manager()

    class Meta:
        ordering = ["-finished_at", "-id"]
        verbose_name = "burn-in"
        indexes = [models.Index(fields=["gpu", "-finished_at"], name="burnin_gpu_latest_idx")]
        constraints = [models.UniqueConstraint(fields=["run", "gpu"], name="burnin_one_per_run_and_gpu")]

    def __str__(self) -> str:
        return f"{self.gpu_id} burn-in {self.verdict} {self.finished_at:%Y-%m-%d %H:%M}"

    @property
    def verdict(self) -> str:
        return VERDICTS[self.passed][0]

    @property
    def verdict_colour(self) -> str:
        return VERDICTS[self.passed][1]
