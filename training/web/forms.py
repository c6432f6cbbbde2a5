"""The launch and sweep forms: parse what the browser sent, then check it like every other launch."""

from django import forms
from django.conf import settings
from django.utils import timezone

from fleet.localtime import when
from inventory.models import GPU, GPUModel, Node, Project
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from training import strategies
from training.choices import SweepMetric, SweepMode
from training.launching.launch import LaunchRequest, check_launch
from training.launching.params import LAUNCH_DEFAULTS
from training.models import SCRIPT
from training.profiling import options as profile_options
from training.sweeps.search import SweepRequest, check_sweep, parse_values
from training.workloads import WORKLOADS
from training.workloads.hyperparams import OPTIMIZERS

HYPERPARAMETERS = ("epochs", "batch_size", "lr", "optimizer", "seed", "size", "iterations")
LABELS = {
    "epochs": "Epochs",
    "batch_size": "Batch size (per process)",
    "lr": "Learning rate",
    "optimizer": "Optimizer",
    "seed": "Seed",
    "size": "Matrix size (0 = automatic)",
    "iterations": "Iterations",
}


def workload_choices() -> list[tuple[str, str]]:
    choices = [(name, f"{name} — {spec.description}") for name, spec in WORKLOADS.items()]
    if settings.RUN_SCRIPT_DIRS:
        choices.append((SCRIPT, "Your own script (a path in an allowed directory)"))
    return choices


def _number_field(name: str) -> forms.CharField:
    # Text, not IntegerField: training.launching.params words every bad value the same way for the form and the API.
    return forms.CharField(label=LABELS[name], required=False, widget=forms.TextInput(attrs={"inputmode": "decimal"}))


def my_bookings(user) -> list[tuple[str, str]]:
    """The user's bookings that have not ended, as (id, words) choices."""
    rows = Reservation.objects.filter(user=user, status=ReservationStatus.ACTIVE, end__gt=timezone.now())
    found: dict[str, list] = {}
    for row in rows.select_related("gpu__node").order_by("start", "gpu__node__hostname", "gpu__index"):
        found.setdefault(str(row.booking), []).append(row)
    return [
        (key, f"{', '.join(str(row.gpu) for row in group)} · {when(group[0].start)} – {when(group[0].end)}")
        for key, group in found.items()
    ]


class PlacementMixin:
    """Project, GPUs and the CPU-only node, limited to what the user may use."""

    def setup_placement(self, user) -> None:
        self.user = user
        projects = Project.objects.all() if user.is_staff else Project.objects.filter(members=user)
        self.fields["project"].queryset = projects
        self.fields["gpus"].queryset = GPU.objects.select_related("node", "model")
        self.fields["node"].queryset = Node.objects.all()

    def add_errors(self, errors: dict[str, str]) -> None:
        for name, message in errors.items():
            self.add_error(name if name in self.fields else None, message)


class LaunchForm(PlacementMixin, forms.Form):
    name = forms.CharField(max_length=100, required=False)
    project = forms.ModelChoiceField(queryset=Project.objects.none(), required=False)
    workload = forms.ChoiceField(choices=workload_choices)
    script = forms.CharField(label="Script path", max_length=1000, required=False)
    strategy = forms.ChoiceField(
        choices=strategies.choices, initial=LAUNCH_DEFAULTS["strategy"], help_text=strategies.hints()
    )
    gpus = forms.ModelMultipleChoiceField(queryset=GPU.objects.none(), required=False, label="GPUs")
    node = forms.ModelChoiceField(queryset=Node.objects.none(), required=False, label="Node (CPU-only run)")
    processes = forms.CharField(label="Processes per node", required=False)
    booking = forms.ChoiceField(
        required=False, label="On my booking", help_text="The run takes the booking's GPUs and starts when it begins."
    )
    override = forms.BooleanField(
        required=False, label="Launch even on GPUs someone else is using (admins; the override is recorded)"
    )
    epochs = _number_field("epochs")
    batch_size = _number_field("batch_size")
    lr = _number_field("lr")
    optimizer = forms.ChoiceField(choices=[("", "default")] + [(o, o) for o in OPTIMIZERS], required=False)
    seed = _number_field("seed")
    size = _number_field("size")
    iterations = _number_field("iterations")
    profile = forms.BooleanField(
        required=False,
        label="Profile a few steps",
        help_text="Built-in workloads: the torch profiler over a window of steps; scripts: cProfile from start to end.",
    )
    profile_wait = forms.CharField(label="Wait (steps)", required=False, initial=profile_options.DEFAULTS["wait"])
    profile_warmup = forms.CharField(
        label="Warm-up (steps)", required=False, initial=profile_options.DEFAULTS["warmup"]
    )
    profile_active = forms.CharField(
        label="Recorded (steps)", required=False, initial=profile_options.DEFAULTS["active"]
    )
    profile_ranks = forms.ChoiceField(
        label="Profile", choices=[("0", "rank 0"), ("all", "every rank")], initial="0", required=False
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.setup_placement(user)
        self.fields["booking"].choices = [("", "none: run now"), *my_bookings(user)]
        self.plan = None

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        workload = data["workload"]
        taken = (
            WORKLOADS[workload].params if workload in WORKLOADS else ("epochs", "batch_size", "lr", "optimizer", "seed")
        )
        request = LaunchRequest(
            user=self.user,
            workload=workload,
            strategy=data["strategy"],
            name=data["name"],
            project=data["project"],
            script=data["script"] if workload == SCRIPT else "",
            gpus=list(data["gpus"]),
            node=data["node"],
            processes=data["processes"] or None,
            hyperparameters={name: data[name] for name in taken if data.get(name) not in (None, "")},
            override=data["override"],
            booking=data["booking"] or None,
            profiler=self.profiler_options(data),
        )
        self.plan, errors = check_launch(request)
        self.add_errors({("profile" if name == "profiler" else name): message for name, message in errors.items()})
        return data

    @staticmethod
    def profiler_options(data: dict) -> dict | None:
        """The profiler fields as the API's ``profiler`` object; a script takes only the ranks (cProfile)."""
        if not data.get("profile"):
            return None
        options = {"ranks": data.get("profile_ranks") or profile_options.DEFAULTS["ranks"]}
        if data["workload"] != SCRIPT:
            options.update({name: data.get(f"profile_{name}") for name in profile_options.WINDOW})
        return options


class SweepForm(PlacementMixin, forms.Form):
    name = forms.CharField(max_length=100, required=False)
    project = forms.ModelChoiceField(queryset=Project.objects.none(), required=False)
    workload = forms.ChoiceField(choices=lambda: [(n, n) for n in WORKLOADS if "single" in WORKLOADS[n].strategies])
    mode = forms.ChoiceField(choices=SweepMode.choices, initial=SweepMode.GRID, label="Search")
    samples = forms.IntegerField(min_value=1, required=False, help_text="Runs of a random search.")
    seed = forms.IntegerField(min_value=0, required=False, initial=0, label="Seed of the random search")
    metric = forms.ChoiceField(choices=SweepMetric.choices, initial=SweepMetric.ACCURACY)
    gpus = forms.ModelMultipleChoiceField(queryset=GPU.objects.none(), required=False, label="GPUs")
    gpu_count = forms.IntegerField(min_value=1, max_value=10000, required=False, label="GPUs at once")
    gpu_model = forms.ModelChoiceField(queryset=GPUModel.objects.all(), required=False, label="of the model")
    node = forms.ModelChoiceField(queryset=Node.objects.none(), required=False, label="Node (CPU-only runs)")
    space_epochs = forms.CharField(label="Epochs", required=False)
    space_batch_size = forms.CharField(label="Batch size", required=False)
    space_lr = forms.CharField(label="Learning rate", required=False)
    space_optimizer = forms.CharField(label="Optimizer", required=False)
    space_seed = forms.CharField(label="Seed", required=False)

    SPACE = ("epochs", "batch_size", "lr", "optimizer", "seed")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.setup_placement(user)
        self.plans = []
        self.request = None

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        space, base = {}, {}
        for name in self.SPACE:
            values = parse_values(data.get(f"space_{name}") or "")
            if isinstance(values, list) and len(values) == 1:
                base[name] = values[0]  # one value is a fixed setting, not a dimension
            elif values:
                space[name] = values
        self.request = SweepRequest(
            user=self.user,
            workload=data["workload"],
            mode=data["mode"],
            space=space,
            name=data["name"],
            project=data["project"],
            samples=data.get("samples"),
            seed=data.get("seed") or 0,
            metric=data["metric"],
            base=base,
            gpus=list(data["gpus"]),
            node=data["node"],
            gpu_model=data.get("gpu_model"),
            gpu_count=data.get("gpu_count"),
        )
        self.plans, errors = check_sweep(self.request)
        for name, message in errors.items():
            self.add_error(name if name in self.fields else None, message)
        return data
