"""Fixtures of the API contract's tests: a researcher and an admin without password hashing (it is slow)."""

import pytest

from tests.support.reservations import fleet_gpus  # noqa: F401


@pytest.fixture
def cast(db):
    from django.contrib.auth import get_user_model

    from inventory.models import Project

    User = get_user_model()
    people = {
        "owner": User.objects.create_user("alice", "alice@example.org"),
        "teammate": User.objects.create_user("bob", "bob@example.org"),
        "admin": User.objects.create_user("root", "root@example.org", is_staff=True, is_superuser=True),
    }
    project = Project.objects.create(name="vision", monthly_budget=1000)
    project.members.add(people["owner"], people["teammate"])
    people["project"] = project
    return people
