"""The Costs page: one month by person, project and GPU model; history; budgets against spending; waste."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone

from monitoring.costs.report import BadMonth, build, chart_data


def month_choices(count: int = 12) -> list[str]:
    local = timezone.localtime()
    year, month = local.year, local.month
    labels = []
    for _ in range(count):
        labels.append(f"{year:04d}-{month:02d}")
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    return labels


def costs(request):
    try:
        report = build(request.user, request.GET.get("month"))
    except BadMonth as exc:
        messages.error(request, str(exc))
        report = build(request.user, None)
    underused = Paginator(report.underused, 100).get_page(request.GET.get("underused_page"))
    context = {"report": report, "underused": underused, "chart": chart_data(report), "months": month_choices()}
    return render(request, "monitoring/costs.html", context)
