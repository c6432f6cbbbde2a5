"""API tokens: the page under the user's settings, and `POST /api/token/` for scripts that log in."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.forms import NewTokenForm
from accounts.tokens import issue, revoke
from fleet.localtime import in_local_time


@never_cache  # the page that shows a new key must not be kept by any cache
@in_local_time
def tokens_page(request):
    form = NewTokenForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        token, new_key = issue(request.user, form.cleaned_data["name"], form.cleaned_data["expires"])
        form = NewTokenForm()
    context = {"form": form, "tokens": request.user.api_tokens.all(), "new_key": new_key, "now": timezone.now()}
    status = 400 if request.method == "POST" and new_key is None else 200
    return render(request, "fleet/tokens.html", context, status=status)


@require_POST
def token_revoke(request, pk: int):
    token = get_object_or_404(request.user.api_tokens, pk=pk)
    if revoke(token):
        messages.success(request, f"Token {token.name} revoked: it no longer opens the API.")
    return redirect("fleet:tokens")
