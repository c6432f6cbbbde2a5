"""Shared fixtures: the cast of users, a real ASGI server and a real browser."""

import os
from contextlib import contextmanager

import pytest
from hypothesis import settings as hypothesis_settings

# Property tests run the same generated cases every time (HYPOTHESIS_PROFILE=explore draws new ones),
# so a suite that passed once passes again; explore locally to look for new failing inputs.
hypothesis_settings.register_profile("repeatable", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("explore", print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Django is imported inside the fixtures, so that the agent's tests also run without it (-p no:django).

PASSWORD = "correct-horse-battery-9"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session", autouse=True)
def checkpoint_root(tmp_path_factory):
    """Each session's runs keep their checkpoints apart: run ids start again with every test database.

    Set before any server or node worker starts, which inherit it through the environment.
    """
    path = tmp_path_factory.mktemp("checkpoints")
    os.environ["RUN_CHECKPOINT_DIR"] = str(path)
    try:
        from django.conf import settings
    except ImportError:  # the agent's tests run without Django
        return path
    if settings.configured:
        settings.RUN_CHECKPOINT_DIR = path
    return path


@pytest.fixture
def cast(db):
    """Every permission test gets the same people: an owner, a teammate, an outsider and an admin."""
    from django.contrib.auth import get_user_model

    from inventory.models import Project

    User = get_user_model()
    people = {
        "owner": User.objects.create_user("alice", "alice@example.org", PASSWORD),
        "teammate": User.objects.create_user("bob", "bob@example.org", PASSWORD),
        "outsider": User.objects.create_user("eve", "eve@example.org", PASSWORD),
        "admin": User.objects.create_user("root", "root@example.org", PASSWORD, is_staff=True, is_superuser=True),
    }
    project = Project.objects.create(name="vision", monthly_budget=1000)
    project.members.add(people["owner"], people["teammate"])
    people["project"] = project
    return people


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real uvicorn serving the app against the test database (use with transactional_db)."""
    from tests.support.processes import ServerProcess, process_environment, wait_for_other_sessions_to_end

    with django_db_blocker.unblock():
        server = ServerProcess(process_environment(), tmp_path_factory.mktemp("server") / "server.log")
    yield server
    server.stop()
    with django_db_blocker.unblock():
        wait_for_other_sessions_to_end()


@contextmanager
def async_unsafe_allowed():
    # Playwright's sync API keeps an event loop running in this thread; the test's own ORM calls are sync.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser():
    """Debian's chromium through Playwright, started per test so no event loop outlives it."""
    from django.db import connections
    from playwright.sync_api import sync_playwright

    with async_unsafe_allowed(), sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()
        # ORM calls made while Playwright's loop runs get their own connection; close it with the loop.
        connections.close_all()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def log_in(page, server, username: str, password: str = PASSWORD) -> None:
    page.goto(server.url + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    # Wait for the navigation the click starts: a goto() while it is still on its way is interrupted by it.
    with page.expect_navigation(wait_until="domcontentloaded"):
        page.click("button[type=submit]")


@pytest.fixture
def gpu_models(db):
    """The datasheet GPU models; transactional tests empty every table, so seed them again."""
    import importlib

    from django.apps import apps

    importlib.import_module("inventory.migrations.0002_seed_gpu_models").seed(apps, None)
