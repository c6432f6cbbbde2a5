"""Onboarding a node from the admin: adding it or rotating its token shows the agent token once, with the
lines that install the agent; the token lets an agent say hello, and no page shows it again."""

import asyncio
import html
import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission
from django.db import connections
from django.urls import reverse

from inventory.models import Node
from inventory.node_tokens import hash_token
from inventory.nodes import add_node, node_for_token
from monitoring.ingest.batcher import close_batcher
from monitoring.ingest.presence import close_sweeper
from tests.conftest import log_in
from tests.monitoring.ingest.agents import Agent, hello

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = re.compile(r'id="node-token"[^>]*>([^<]+)<')


def shown_token(response) -> str:
    found = TOKEN.search(response.content.decode())
    assert found, response.content.decode()[:3000]
    return found.group(1).strip()


def says_hello(token: str, hostname: str) -> dict:
    """What the server answers an agent's hello made with ``token``: the welcome, or the close code."""

    async def scenario():
        agent = Agent(token, hostname)
        try:
            await agent.connect()
            await agent.send(hello(hostname, gpus=1))
            answer = await agent.ws.receive_output(5)
            if answer["type"] == "websocket.close":
                return {"closed": answer.get("code")}
            return json.loads(answer["text"])
        finally:
            await agent.stop()
            await close_batcher()
            await close_sweeper()
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    return asyncio.run(scenario())


def add_in_admin(client, hostname: str):
    return client.post(reverse("admin:fleet_node_add"), {"hostname": hostname, "labels": "[]"})


def test_adding_a_node_shows_its_token_once_and_an_agent_connects_with_it(client, cast, gpu_models):
    client.force_login(cast["admin"])

    response = add_in_admin(client, "gpu-07")

    assert response.status_code == 200
    token = shown_token(response)
    node = Node.objects.get(hostname="gpu-07")
    assert node.token_hash == hash_token(token) and node.token_created is not None
    page = html.unescape(response.content.decode())
    assert "shown once" in page and 'data-copy="node-token"' in page
    assert f"echo '{token}' > /etc/gpu-fleet/agent.token" in page  # the install line, as docs/install.md
    assert "FLEET_AGENT_SERVER=ws://testserver" in page and "systemctl enable --now gpu-fleet-agent" in page
    assert says_hello(token, "gpu-07")["type"] == "welcome"
    for url in (reverse("admin:fleet_node_change", args=[node.pk]), reverse("admin:fleet_node_changelist")):
        assert token not in client.get(url).content.decode()


def test_rotating_shows_a_new_token_once_and_the_old_one_stops_at_once(client, cast, gpu_models):
    node, old = add_node("gpu-08")
    client.force_login(cast["admin"])
    url = reverse("admin:fleet_node_rotate_token", args=[node.pk])
    assert url in client.get(reverse("admin:fleet_node_change", args=[node.pk])).content.decode()

    asked = client.get(url)
    response = client.post(url)

    assert "stops working at once" in asked.content.decode() and 'id="node-token"' not in asked.content.decode()
    new = shown_token(response)
    assert new != old and node_for_token(new) == node and node_for_token(old) is None
    assert says_hello(old, "gpu-08") == {"closed": 4401}
    assert says_hello(new, "gpu-08")["type"] == "welcome"
    assert new not in client.get(reverse("admin:fleet_node_change", args=[node.pk])).content.decode()


def test_only_staff_who_may_change_nodes_rotate_a_token(client, cast):
    node, token = add_node("gpu-09")
    url = reverse("admin:fleet_node_rotate_token", args=[node.pk])
    client.force_login(cast["owner"])
    assert client.post(url).status_code == 302  # to the admin's sign-in
    viewer = cast["teammate"]
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_node"))
    client.force_login(viewer)
    assert client.post(url).status_code == 403
    assert node_for_token(token) == node


def test_the_token_page_shows_the_token_with_a_copy_button_at_1440_and_390_px(asgi_server, browser, cast):
    context = browser.new_context(
        viewport={"width": 1440, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors, failed = [], []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("response", lambda answer: failed.append(answer.url) if answer.status >= 400 else None)
    log_in(page, asgi_server, "root")
    page.goto(asgi_server.url + reverse("admin:fleet_node_add"))
    page.fill("#id_hostname", "gpu-new")
    with page.expect_navigation(wait_until="domcontentloaded"):
        page.click("input[name=_save]")

    # One add (the page is the answer to its POST, so it cannot be reloaded), seen at both widths.
    token = page.locator("#node-token")
    copy = page.locator('button[data-copy="node-token"]')
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert token.is_visible() and copy.is_visible() and page.locator("#agent-install").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert node_for_token(token.inner_text().strip()).hostname == "gpu-new"
    copy.click()
    page.locator('button[data-copy="node-token"]', has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == token.inner_text().strip()
    assert failed == []
    # Chromium asks for /favicon.ico unseen by Playwright; that 404 is issue 31 item 16's, not this page's.
    assert [error for error in errors if "404 (Not Found)" not in error] == []
    context.close()
