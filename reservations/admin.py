"""Bookings, quotas, deadline windows, booking events and calendar feeds in Django's admin."""

from django.contrib import admin

from reservations.models import CalendarFeed, DeadlineWindow, QuotaPolicy, Reservation, ReservationEvent


@admin.register(Reservation)
class ReservationAdmin(admin.ModelAdmin):
    list_display = ["gpu", "user", "project", "start", "end", "status", "first_used_at", "deadline_name"]
    list_filter = ["status", "project", "gpu__model", "gpu__node"]
    search_fields = ["user__username", "purpose", "deadline_name", "gpu__node__hostname", "gpu__uuid"]
    list_select_related = ["gpu__node", "user", "project"]
    date_hierarchy = "start"
    raw_id_fields = ["gpu", "user", "changed_by"]
    readonly_fields = ["booking", "first_used_at", "created", "status_changed"]


@admin.register(QuotaPolicy)
class QuotaPolicyAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user_gpu_hours_per_week", "project_gpu_hours_per_week", "longest_booking_hours"]

    def has_add_permission(self, request):
        return not QuotaPolicy.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DeadlineWindow)
class DeadlineWindowAdmin(admin.ModelAdmin):
    list_display = ["name", "deadline", "window_days", "user_gpu_hours_per_week", "longest_booking_hours"]
    search_fields = ["name"]
    list_filter = ["deadline"]


@admin.register(ReservationEvent)
class ReservationEventAdmin(admin.ModelAdmin):
    list_display = ["created", "kind", "user", "actor", "detail", "emailed_at", "processed"]
    list_filter = ["kind", "created"]
    search_fields = ["detail", "user__username", "os_user"]
    list_select_related = ["user", "actor"]
    raw_id_fields = ["reservation", "user", "actor"]


@admin.register(CalendarFeed)
class CalendarFeedAdmin(admin.ModelAdmin):
    list_display = ["user", "created"]
    search_fields = ["user__username"]
    readonly_fields = ["token_hash", "created"]
