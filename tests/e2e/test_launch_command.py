"""In a real browser: a researcher launches their own command from the form's Command mode at desktop and phone
widths, and the run page shows what it runs, its variables masked, and its environment record readably."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from tests.conftest import log_in
from tests.support.node_workers import unique_hostname
from tests.training.conftest import add_node
from training import broadcast
from training.models import Run
from training.serializers import state_payload
from training.variables import SECRET_MASK

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"desktop": (1440, 900), "phone": (390, 844)}
COMMAND = """python train.py --config "configs/my base.yaml" --unknown-flag --note 'say "hi"'"""
ARGV = ["python", "train.py", "--config", "configs/my base.yaml", "--unknown-flag", "--note", 'say "hi"']


@pytest.fixture
def node(gpu_models):
    node = add_node(unique_hostname("gpu-cmd"), gpus=2)
    yield node
    import redis
    from django.conf import settings

    from fleet.celery import node_queue

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(node_queue(node.hostname))
    client.close()


def page_at(browser, server, width: int, height: int):
    phone = width < 600
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.set_default_timeout(45_000)
    log_in(page, server, "alice")
    return page


def widths(page) -> dict:
    return page.evaluate(
        """() => ({scrollWidth: document.scrollingElement.scrollWidth, viewport: window.innerWidth,
                   wide: [...document.querySelectorAll("body *")]
                     .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
                     .slice(0, 5).map((el) => el.tagName + "#" + el.id + "." + el.className)})"""
    )


def fits(page) -> None:
    sizes = widths(page)
    assert sizes["scrollWidth"] <= sizes["viewport"], sizes


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_command_launched_from_the_form_is_stored_and_shown(browser, asgi_server, cast, node, size):
    page = page_at(browser, asgi_server, *VIEWPORTS[size])
    page.goto(asgi_server.url + "/runs/new/")
    expect(page.locator("#id_epochs")).to_be_visible()
    expect(page.locator("#id_command")).to_be_hidden()

    page.get_by_label("My own command").check()
    expect(page.locator("#id_command")).to_be_visible()
    expect(page.locator("#id_epochs")).to_be_hidden()
    expect(page.locator("#id_workload")).to_be_hidden()
    expect(page.locator("#id_profile")).to_be_hidden()
    expect(page.locator("[data-field=env_ref]")).to_be_hidden()  # the fleet's own Python takes no path
    page.fill("#id_name", f"own code {size}")
    page.fill("#id_command", COMMAND)
    page.fill("#id_workdir", "relative/dir")
    page.fill("#id_variables", "WANDB_MODE=offline\nHF_TOKEN=hf_very_secret")
    page.fill("#id_setup", "pip install -r requirements.txt\necho ready")
    page.check(f"[data-node='{node.hostname}'] input[name=gpus] >> nth=0")
    page.screenshot(path=f"/tmp/launch-command-{size}.png", full_page=True)
    fits(page)
    page.click("button[type=submit]")

    # Refused by its field, the mode and every value kept; nothing stored.
    expect(page.locator("[data-field=workdir] .errorlist")).to_contain_text("absolute path")
    expect(page.locator("#id_command")).to_be_visible()
    assert page.input_value("#id_command") == COMMAND and Run.objects.count() == 0
    page.screenshot(path=f"/tmp/launch-command-error-{size}.png", full_page=True)
    fits(page)
    page.fill("#id_workdir", "/srv/lab/repo")
    page.click("button[type=submit]")

    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get(name=f"own code {size}")
    assert (run.workload, run.command, run.shell_line, run.workdir) == ("command", ARGV, "", "/srv/lab/repo")
    assert run.variables == {"WANDB_MODE": "offline", "HF_TOKEN": "hf_very_secret"}
    assert (run.setup, run.env_kind, run.hyperparameters) == (
        "pip install -r requirements.txt\necho ready",
        "fleet",
        {},
    )

    expect(page.locator("#program-command")).to_have_text(
        """python train.py --config 'configs/my base.yaml' --unknown-flag --note 'say "hi"'"""
    )
    expect(page.locator("#program-variables")).to_contain_text(f"HF_TOKEN={SECRET_MASK}")
    expect(page.locator("#program-variables")).to_contain_text("WANDB_MODE=offline")
    expect(page.locator("#program-setup")).to_have_text("pip install -r requirements.txt\necho ready")
    assert "hf_very_secret" not in page.content()
    page.screenshot(path=f"/tmp/run-command-{size}.png", full_page=True)
    page.locator("#program").screenshot(path=f"/tmp/run-command-card-{size}.png")
    fits(page)

    page.click("text=Launch again")
    expect(page.locator("#id_command")).to_have_value(
        """python train.py --config 'configs/my base.yaml' --unknown-flag --note 'say "hi"'"""
    )
    assert sorted(page.input_value("#id_variables").splitlines()) == ["HF_TOKEN=", "WANDB_MODE=offline"]


def test_the_environment_record_lists_packages_as_a_count_not_an_object(page, asgi_server, cast, node):
    record = {
        "python": "3.11.2",
        "torch": "2.13.0",
        "cuda": None,
        "packages": {"torch": "2.13.0", "numpy": "2.1.0", "gpu-fleet-events": "0.1"},
        "command": ["python", "train.py", "--name", "two words"],
        "git_dirty": True,
        "record": {"kind": "venv", "prefix": "/srv/envs/a"},
    }
    run = Run.objects.create(
        owner=cast["owner"],
        name="recorded",
        workload="command",
        strategy="single",
        shell_line="cd src && python train.py | tee log.txt",
        environment=record,
    )
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + f"/runs/{run.pk}/")
    expect(page.locator("#live-label")).to_have_text("live")
    environment = page.locator("#environment")
    expect(environment).to_contain_text("3 installed (torch 2.13.0)")
    expect(environment).to_contain_text("python train.py --name 'two words'")
    expect(environment).to_contain_text('{"kind": "venv", "prefix": "/srv/envs/a"}')
    expect(environment).to_contain_text("none (CPU build)")
    assert "[object Object]" not in environment.inner_text()
    expect(page.locator("#program")).to_contain_text("bash -lc")

    # A live update with a new record is written the same way.
    Run.objects.filter(pk=run.pk).update(environment={**record, "host": "gpu-cmd-host"})
    # Sent from another thread: Playwright's event loop holds this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(broadcast.send_now, run.pk, state_payload(Run.objects.get(pk=run.pk))).result()
    expect(environment).to_contain_text("gpu-cmd-host")
    expect(environment).to_contain_text("3 installed (torch 2.13.0)")
    assert "[object Object]" not in environment.inner_text()
