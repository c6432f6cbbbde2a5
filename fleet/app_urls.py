from django.urls import path

from fleet import views

app_name = "fleet"

urlpatterns = [
    path("fleet/", views.fleet, name="fleet"),
    path("fleet/nodes/<str:hostname>/", views.node, name="node"),
    path("fleet/gpus/<str:uuid>/", views.gpu, name="gpu"),
    path(
        "reservations/",
        views.placeholder("Reservations", "Book GPUs ahead of your deadlines."),
        name="reservations",
    ),
]
