"""/api/costs/: one month's spending by person, project and GPU model, budgets with forecasts, waste."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from fleet.api.pagination import Pages, paginated
from monitoring.costs.idle_report import UnderusedRows
from monitoring.costs.report import BadMonth, build, parse_month


class LineSerializer(serializers.Serializer):
    label = serializers.CharField()
    gpu_hours = serializers.FloatField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=2)
    idle_hours = serializers.FloatField()
    idle_cost = serializers.DecimalField(max_digits=14, decimal_places=2)


class IdleTotalSerializer(serializers.Serializer):
    hours = serializers.FloatField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)


class UnderusedSerializer(serializers.Serializer):
    gpu = serializers.CharField()
    node = serializers.CharField()
    gpu_index = serializers.IntegerField()
    pid = serializers.IntegerField()
    name = serializers.CharField()
    os_user = serializers.CharField()
    owner = serializers.CharField(allow_null=True)
    project = serializers.CharField(allow_null=True)
    stretches = serializers.IntegerField(help_text="Idle stretches at least as long as the window.")
    idle_hours = serializers.FloatField()
    idle_cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
    last_idle = serializers.DateTimeField()


class ForecastSerializer(serializers.Serializer):
    per_day = serializers.DecimalField(max_digits=14, decimal_places=2)
    recent_per_day = serializers.DecimalField(max_digits=14, decimal_places=2)
    recent_hours = serializers.IntegerField()
    month_end_total = serializers.DecimalField(max_digits=14, decimal_places=2)
    passes_on = serializers.DateTimeField(allow_null=True)
    already_over = serializers.BooleanField()
    sentence = serializers.CharField()
    method = serializers.SerializerMethodField()

    def get_method(self, obj) -> str:
        return f"the rate of the last {obj.recent_hours} h, carried to the month's end"


class BudgetSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    amount = serializers.DecimalField(max_digits=14, decimal_places=2)
    spent = serializers.DecimalField(max_digits=14, decimal_places=2)
    used_pct = serializers.FloatField(allow_null=True)
    forecast = ForecastSerializer(allow_null=True)


class BookingCostSerializer(serializers.Serializer):
    reservation = serializers.IntegerField(source="reservation.pk")
    gpu = serializers.CharField(source="reservation.gpu.uuid")
    holder = serializers.CharField(source="reservation.user.username")
    project = serializers.CharField(source="reservation.project.name", default=None)
    start = serializers.DateTimeField(source="reservation.start")
    end = serializers.DateTimeField(source="reservation.end")
    status = serializers.CharField(source="reservation.status")
    held_hours = serializers.FloatField()
    used_hours = serializers.FloatField()
    idle_hours = serializers.FloatField()
    held_cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
    used_cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
    idle_cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
    basis = serializers.CharField(help_text="samples (raw, exact) or hourly (the usage rollup, whole hours).")


class RunCostSerializer(serializers.Serializer):
    run = serializers.IntegerField(source="run.pk")
    name = serializers.CharField(source="run.name")
    owner = serializers.CharField(source="run.owner.username")
    project = serializers.CharField(source="run.project.name", default=None)
    status = serializers.CharField(source="run.status")
    gpu_hours = serializers.FloatField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)


class ReportSerializer(serializers.Serializer):
    month = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    total = LineSerializer()
    by_user = LineSerializer(many=True)
    by_project = LineSerializer(many=True)
    by_model = LineSerializer(many=True)
    history = LineSerializer(many=True)
    budgets = BudgetSerializer(many=True)
    idle_by_user = LineSerializer(many=True)
    idle_in_stretches = IdleTotalSerializer(
        help_text="GPU-hours idle in stretches at least as long as the idle window (total.idle_* counts every sample)."
    )
    underused = serializers.SerializerMethodField(
        help_text="The first page of /api/costs/underused/ (processes idle between bursts of work: never alerted)."
    )
    bookings = BookingCostSerializer(many=True)
    runs = RunCostSerializer(many=True)

    def get_underused(self, report) -> dict:
        rows, size = report.underused, Pages.default_limit
        count = len(rows)
        url = reverse("monitoring:api-costs-underused", request=self.context.get("request"))
        following = f"{url}?month={report.month}&limit={size}&offset={size}" if count > size else None
        results = UnderusedSerializer(rows[0:size], many=True).data
        return {"count": count, "next": following, "previous": None, "results": results}


class CostsView(APIView):
    """Spending for a calendar month (site time zone), measured from process samples."""

    @extend_schema(
        parameters=[OpenApiParameter("month", str, description="YYYY-MM; the current month when omitted.")],
        responses=ReportSerializer,
    )
    def get(self, request):
        try:
            report = build(request.user, request.query_params.get("month"))
        except BadMonth as exc:
            raise ValidationError({"month": str(exc)}) from exc
        return Response(ReportSerializer(report, context={"request": request}).data)


MONTH = OpenApiParameter("month", str, description="YYYY-MM; the current month when omitted.")


class UnderusedView(APIView):
    """The underused-GPU report of a calendar month, most idle first, in pages."""

    pagination_class = Pages

    @extend_schema(parameters=[MONTH], responses=UnderusedSerializer(many=True))
    def get(self, request):
        try:
            start, end = parse_month(request.query_params.get("month"), timezone.now())
        except BadMonth as exc:
            raise ValidationError({"month": str(exc)}) from exc
        return paginated(self, request, UnderusedRows(start, end), UnderusedSerializer)
