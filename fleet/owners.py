"""Who owns a GPU process: OS usernames on the nodes mapped to researchers."""

from django.contrib.auth import get_user_model

from fleet.models import OsAccount


def owners_by_os_username(usernames: set[str]) -> dict:
    """Map each OS username to a Django user: an explicit OsAccount first, then a user of the same name."""
    found = {a.username: a.user for a in OsAccount.objects.filter(username__in=usernames).select_related("user")}
    missing = set(usernames) - found.keys()
    if missing:
        for user in get_user_model().objects.filter(username__in=missing):
            found[user.username] = user
    return found
