"""A run's stored profiles as the run page shows them: tables in milliseconds and the step-time split."""

from dataclasses import dataclass, field

from training.models import Run, RunProfile
from training.profiling.downloads import file_name

TOP_ROWS = 15
SPLIT_PARTS = (("compute_us", "Compute"), ("data_us", "Data loading"), ("communication_us", "Communication"))


@dataclass
class ProfileView:
    """One profiled rank, ready for the template."""

    rank: int
    kind: str
    note: str
    size_mb: float
    file_name: str
    window: dict = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    rows: list[list] = field(default_factory=list)
    split: list[tuple[str, float | None, float | None]] = field(default_factory=list)
    step_ms: float | None = None


def profile_views(run: Run) -> list[ProfileView]:
    return [view_of(profile) for profile in RunProfile.objects.filter(run=run).defer("data").order_by("rank")]


def view_of(profile: RunProfile) -> ProfileView:
    view = ProfileView(profile.rank, profile.kind, profile.note, profile.size / 1e6, file_name(profile))
    summary = profile.summary or {}
    if profile.kind == "cprofile":
        view.columns = ["Function", "File:line", "Calls", "Own (s)", "Cumulative (s)"]
        view.rows = [
            [row["function"], f"{row['file']}:{row['line']}", row["calls"], row["own_s"], row["cumulative_s"]]
            for row in summary.get("functions", [])[:TOP_ROWS]
        ]
        return view
    operators = summary.get("operators", [])[:TOP_ROWS]
    cuda = any(row.get("self_cuda_us") for row in operators)
    view.columns = ["Operator", "Calls", "Self CPU (ms)", "CPU total (ms)", *(["Self CUDA (ms)"] if cuda else [])]
    view.rows = [
        [row["name"], row["calls"], _ms(row["self_cpu_us"]), _ms(row["cpu_total_us"])]
        + ([_ms(row["self_cuda_us"])] if cuda else [])
        for row in operators
    ]
    view.window = summary.get("window", {})
    split = summary.get("split", {})
    view.step_ms = _ms(split.get("step_us"))
    total = split.get("total_us") or 0
    view.split = [
        (
            label,
            _ms(split.get(key)),
            round(100 * split[key] / total, 1) if total and split.get(key) is not None else None,
        )
        for key, label in SPLIT_PARTS
    ]
    return view


def _ms(microseconds: float | None) -> float | None:
    return None if microseconds is None else round(microseconds / 1000, 3)


def _share(part: float | None, total: float) -> float | None:
    return round(100 * part / total, 1) if part is not None and total else None
