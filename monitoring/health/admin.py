"""Burn-ins from Django's admin: actions on the inventory's node and GPU lists, through the pages' own path."""

from django.contrib import admin

from inventory.admin import GPUAdmin, NodeAdmin
from inventory.models import GPU
from monitoring.health.views import start as start_burn_ins


@admin.action(description="Burn in every GPU of the selected nodes")
def burn_in_nodes(modeladmin, request, queryset):
    start_burn_ins(request, GPU.objects.filter(node__in=queryset).select_related("node"))


@admin.action(description="Burn in the selected GPUs")
def burn_in_gpus(modeladmin, request, queryset):
    start_burn_ins(request, queryset.select_related("node"))


NodeAdmin.actions = [*NodeAdmin.actions, burn_in_nodes]
GPUAdmin.actions = [*GPUAdmin.actions, burn_in_gpus]
