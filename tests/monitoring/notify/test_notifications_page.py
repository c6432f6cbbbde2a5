"""The notification center: your in-app notifications, marked read one by one or all at once."""

from rest_framework.test import APIClient

from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from tests.support.alerts import open_alert


def inbox(cast):
    open_alert(owner=cast["owner"], title="alice's first")
    open_alert(owner=cast["owner"], title="alice's second")
    open_alert(owner=cast["teammate"], title="bob's")
    dispatch_pending()
    return Notification.objects.filter(user=cast["owner"], transport=TransportKind.IN_APP).order_by("id")


def test_it_lists_only_your_notifications_with_the_badge_count(client, cast):
    inbox(cast)
    client.force_login(cast["owner"])
    body = client.get("/notifications/").content.decode()
    assert "alice&#x27;s first" in body and "alice&#x27;s second" in body and "bob&#x27;s" not in body
    assert "data-unread>2<" in body
    assert "(2 unread)" in body  # the page says what the bell says


def test_mark_one_then_all_read(client, cast):
    first, second = inbox(cast)
    client.force_login(cast["owner"])
    client.post("/notifications/read/", {"id": first.pk})
    assert Notification.objects.filter(read_at=None, user=cast["owner"], transport="inapp").count() == 1
    client.post("/notifications/read/")
    assert not Notification.objects.filter(read_at=None, user=cast["owner"], transport="inapp").exists()
    assert Notification.objects.filter(read_at=None, user=cast["teammate"], transport="inapp").count() == 1


def test_someone_else_notification_cannot_be_marked(client, cast):
    inbox(cast)
    bobs = Notification.objects.get(user=cast["teammate"], transport="inapp")
    client.force_login(cast["owner"])
    client.post("/notifications/read/", {"id": bobs.pk})
    response = client.post("/notifications/read/", {"id": "x"}, follow=True)
    assert "Unknown notification." in response.content.decode()
    assert Notification.objects.get(pk=bobs.pk).read_at is None


def test_the_api_lists_and_marks_read(cast):
    first, _ = inbox(cast)
    api = APIClient()
    api.force_authenticate(cast["owner"])
    listed = api.get("/api/notifications/").json()["results"]
    assert [n["alert"]["title"] for n in listed] == ["alice's second", "alice's first"]
    assert api.post("/api/notifications/read/", {"ids": [first.pk]}, format="json").json() == {"unread": 1}
    assert api.post("/api/notifications/read/", {"ids": ["a"]}, format="json").status_code == 400
    assert api.post("/api/notifications/read/", {}, format="json").json() == {"unread": 0}


def test_an_empty_inbox_says_so(client, cast):
    client.force_login(cast["outsider"])
    assert "Nothing yet." in client.get("/notifications/").content.decode()
