from django.urls import path

from fleet.views import placeholder

app_name = "training"

urlpatterns = [
    path("runs/", placeholder("Runs", "Launch DDP and Hogwild training runs and watch them live."), name="runs"),
]
