"""Every page needs login; the admin is for staff only."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from inventory.models import GPU, GPUModel, Node, OsAccount, Project

# Endpoints that are public on purpose: the login form, the health probe for load balancers,
# endpoints that authenticate with their own tokens (agents, Prometheus, calendar feeds), and the API's
# token endpoint, which takes a username and password (rate limited like the login form).
PUBLIC = ("/login/", "/logout/", "/healthz", "/metrics", "/ical/", "/static/", "/api/token/")


def plain_paths(resolver=None, prefix="") -> list[str]:
    """Every URL of the project that takes no arguments."""
    resolver = resolver or get_resolver()
    paths = []
    for entry in resolver.url_patterns:
        route = str(entry.pattern)
        if "<" in route or "(?P" in route or "^" in route.lstrip("^")[:0]:
            continue
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue
            paths += plain_paths(entry, prefix + route)
        elif isinstance(entry, URLPattern):
            paths.append("/" + prefix + route.lstrip("^").rstrip("$"))
    return sorted(set(paths))


PAGES = [p for p in plain_paths() if not p.startswith(PUBLIC) and not p.startswith("/api/")]
APIS = [p for p in plain_paths() if p.startswith("/api/") and not p.startswith(PUBLIC)]


def test_the_site_has_the_navigation_pages():
    assert {"/fleet/", "/reservations/", "/runs/", "/alerts/", "/costs/"} <= set(PAGES)


@pytest.mark.parametrize("path", PAGES)
def test_an_anonymous_visitor_is_sent_to_login(client, db, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("path", APIS)
def test_the_api_refuses_an_anonymous_caller(client, db, path):
    response = client.get(path)
    assert response.status_code in (401, 403)


@pytest.mark.parametrize("path", ["/fleet/", "/reservations/", "/runs/", "/alerts/", "/costs/"])
def test_a_researcher_sees_each_navigation_page(client, cast, path):
    client.force_login(cast["owner"])
    response = client.get(path)
    assert response.status_code == 200
    assert b"Log out" in response.content


ADMIN_MODELS = [GPUModel, Node, GPU, Project, OsAccount]


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m.__name__)
def test_admin_pages_load_for_staff(client, cast, model):
    client.force_login(cast["admin"])
    opts = model._meta
    for view in ("changelist", "add"):
        response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}"))
        assert response.status_code == 200, (opts.model_name, view)
    response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist") + "?q=a")
    assert response.status_code == 200


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m.__name__)
def test_admin_pages_are_refused_to_researchers(client, cast, model):
    client.force_login(cast["owner"])
    opts = model._meta
    response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_the_fleet_page_lists_nodes_and_gpus_from_the_database(client, cast):
    node = Node.objects.create(hostname="gpu-07")
    GPU.objects.create(node=node, index=3, uuid="GPU-abc", model=GPUModel.objects.get(name="T4"))
    client.force_login(cast["owner"])
    body = client.get("/fleet/").content.decode()
    assert "gpu-07" in body and "GPU 3" in body and "T4" in body
