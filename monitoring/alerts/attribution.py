"""Which project a researcher's GPU time counts for.

A researcher in several projects is attributed to the project they joined first; a GPU booking or a
run that names a project takes precedence where one covers the process.
"""

from fleet.models import Project


def first_projects(user_ids: set[int]) -> dict[int, int]:
    """Map each user to the project they joined first (the oldest membership row)."""
    memberships = (
        Project.members.through.objects.filter(user_id__in=user_ids)
        .order_by("user_id", "id")
        .values_list("user_id", "project_id")
    )
    found: dict[int, int] = {}
    for user_id, project_id in memberships:
        found.setdefault(user_id, project_id)
    return found
