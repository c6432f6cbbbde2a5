"""A profiled rank's file as a download, for the run page and the API (both check who may see the run first)."""

import gzip

from django.http import Http404, HttpResponse

from training.models import Run, RunProfile

CONTENT_TYPES = {"torch": "application/json", "cprofile": "application/octet-stream"}
NAMES = {"torch": "trace.json", "cprofile": "profile.prof"}


def file_name(profile: RunProfile) -> str:
    return f"run-{profile.run_id}-rank-{profile.rank}-{NAMES.get(profile.kind, 'profile.bin')}"


def response(run: Run, rank: int) -> HttpResponse:
    """The file, uncompressed, as an attachment; 404 when the rank was not profiled or its file was not kept."""
    profile = RunProfile.objects.filter(run=run, rank=rank).exclude(size=0).first()
    if profile is None:
        raise Http404("This rank of the run has no profile file.")
    body = gzip.decompress(bytes(profile.data))
    answer = HttpResponse(body, content_type=CONTENT_TYPES.get(profile.kind, "application/octet-stream"))
    answer["Content-Disposition"] = f'attachment; filename="{file_name(profile)}"'
    answer["X-Content-Type-Options"] = "nosniff"
    return answer
