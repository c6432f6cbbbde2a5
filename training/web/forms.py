"""The launch and sweep forms: parse what the browser sent, then check it like every other launch."""

import shlex

from django import forms
from django.conf import settings
from django.utils import timezone

from fleet.localtime import when
from inventory.models import GPU, GPUModel, Node, Project
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from training import environments, strategies
from training.choices import SweepMetric, SweepMode
from training.launching.launch import LaunchRequest, check_launch
from training.launching.params import LAUNCH_DEFAULTS
from training.models import COMMAND, SCRIPT
from training.profiling import options as profile_options
from training.sweeps.search import SweepRequest, check_sweep, parse_values
from training.variables import SECRET_MASK, looks_secret
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


PRESET = "preset"
MODES = [(PRESET, "A preset workload"), (COMMAND, "My own command")]
# The launch's field names for the command, as the form shows them (one text box for a list or a shell line).
COMMAND_ERRORS = {"shell_line": "command"}


def text_area(rows: int, placeholder: str) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "placeholder": placeholder, "spellcheck": "false"})


def lines(text: str) -> str:
    """A text box's value with the browser's CRLF line ends as the node's shell expects them."""
    return text.replace("\r\n", "\n")


def split_command(text: str, as_shell: bool) -> tuple[list[str] | None, str, str | None]:
    """(argument list, shell line, problem) from the command box: split as a POSIX shell would, or kept whole."""
    if as_shell:
        return None, text.strip(), None
    try:
        return shlex.split(text), "", None
    except ValueError as error:
        return (
            None,
            "",
            f"The command cannot be split into words ({error}); close the quote, or run it as a shell line.",
        )


def parse_variables(text: str) -> tuple[dict[str, str], str | None]:
    """NAME=value lines as a dict (blank lines skipped); the first problem as a sentence."""
    variables: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        name = name.strip()
        if not equals:
            return {}, f"Line {number}: write NAME=value, not {line.strip()[:60]!r}."
        if name in variables:
            return {}, f"Line {number}: {name} is set twice."
        if value == SECRET_MASK:
            return {}, f"Line {number}: type the value of {name} again; secret values are never shown."
        variables[name] = value
    return variables, None


def variables_text(variables: dict[str, str]) -> str:
    """A run's variables as the form's lines, secret-looking values left for the researcher to type again."""
    return "\n".join(f"{name}={'' if looks_secret(name) else value}" for name, value in variables.items())


class LaunchForm(PlacementMixin, forms.Form):
    # Not required: a form posted without it (an older page, a script) launches a preset as before.
    mode = forms.ChoiceField(
        choices=MODES, initial=PRESET, required=False, widget=forms.RadioSelect, label="What to run"
    )
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

    command = forms.CharField(
        required=False,
        strip=False,
        label="Command",
        widget=text_area(2, "python train.py --config configs/base.yaml"),
        help_text="Split into words as a shell would (quotes keep spaces), then run without a shell.",
    )
    as_shell = forms.BooleanField(required=False, label="Run it as a shell line (bash -lc), with pipes, && and $VARS")
    env_kind = forms.ChoiceField(choices=environments.choices, initial="fleet", required=False, label="Environment")
    env_ref = forms.CharField(
        required=False,
        label="Path or image",
        help_text="A venv's or conda env's path on the node, or an image.",
        widget=forms.TextInput(attrs={"list": "env-refs", "autocomplete": "off", "spellcheck": "false"}),
    )
    workdir = forms.CharField(
        required=False, label="Working directory", help_text="An absolute path on the node; empty: the run's own."
    )
    variables = forms.CharField(
        required=False,
        strip=False,
        label="Environment variables",
        widget=text_area(3, "WANDB_MODE=offline\nHF_TOKEN=…"),
        help_text="One NAME=value a line. Values of names with TOKEN, KEY, SECRET or PASSWORD are never shown again.",
    )
    setup = forms.CharField(
        required=False,
        strip=False,
        label="Setup",
        widget=text_area(3, "pip install -r requirements.txt"),
        help_text="Runs first, in the same environment and directory; if it fails, the command never starts.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.setup_placement(user)
        self.fields["booking"].choices = [("", "none: run now"), *my_bookings(user)]
        self.plan = None

    @property
    def command_mode(self) -> bool:
        return self["mode"].value() == COMMAND

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if data["mode"] == COMMAND:
            return self.check_command(data)
        workload = data["workload"]
        taken = (
            WORKLOADS[workload].params if workload in WORKLOADS else ("epochs", "batch_size", "lr", "optimizer", "seed")
        )
        request = LaunchRequest(
            **self.placement(data),
            workload=workload,
            script=data["script"] if workload == SCRIPT else "",
            hyperparameters={name: data[name] for name in taken if data.get(name) not in (None, "")},
            profiler=self.profiler_options(data),
        )
        self.plan, errors = check_launch(request)
        self.add_errors({("profile" if name == "profiler" else name): message for name, message in errors.items()})
        return data

    def check_command(self, data: dict) -> dict:
        """Command mode: the command box split (or kept as a shell line) and the variables read, then the launch's
        own checks; no hyperparameters and no profiler."""
        command, shell_line, problem = split_command(lines(data["command"]), data["as_shell"])
        variables, bad_lines = parse_variables(data["variables"])
        local = {"command": problem, "variables": bad_lines}
        if any(local.values()):
            self.add_errors({name: message for name, message in local.items() if message})
            return data
        request = LaunchRequest(
            **self.placement(data),
            workload=COMMAND,
            command=command,
            shell_line=shell_line,
            workdir=data["workdir"].strip(),
            variables=variables,
            setup=lines(data["setup"]),
            env_kind=data["env_kind"] or "fleet",
            env_ref=data["env_ref"].strip(),
        )
        self.plan, errors = check_launch(request)
        self.add_errors({COMMAND_ERRORS.get(name, name): message for name, message in errors.items()})
        return data

    def placement(self, data: dict) -> dict:
        """What every launch takes besides its workload: who, where, how many processes, which booking."""
        return dict(
            user=self.user,
            strategy=data["strategy"],
            name=data["name"],
            project=data["project"],
            gpus=list(data["gpus"]),
            node=data["node"],
            processes=data["processes"] or None,
            override=data["override"],
            booking=data["booking"] or None,
        )

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
