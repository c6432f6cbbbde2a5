"""API token authentication: `Authorization: Bearer <key>` (or `Token <key>`, DRF's word), the token and its
user read by one prebuilt statement from the key's hash (accounts/tokens.py).

Bearer is the word `/metrics`, the agent and most HTTP clients use; Token stays for the scripts written
before. The run and live websockets take the same keys (fleet/websocket_auth.py).
"""

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.tokens import note_use, refusal
from fleet.api.credentials import HOW_TO_AUTHENTICATE, SCHEMES
from fleet.prebuilt_select import PrebuiltSelect
from inventory.node_tokens import hash_token

TOKEN_WITH_USER = PrebuiltSelect(ApiToken, key="key_hash", joined=("user",))


def key_in(header: str) -> str | None:
    """The key of an ``Authorization`` header value; None when there is none; a 401 naming the schemes when
    the header is not one of them."""
    words = header.split()
    if not words:
        return None
    if words[0].lower() not in {scheme.lower() for scheme in SCHEMES}:
        raise exceptions.AuthenticationFailed(f"Unknown authorization scheme {words[0][:20]!r}. {HOW_TO_AUTHENTICATE}")
    if len(words) != 2:
        raise exceptions.AuthenticationFailed(f"Give one token after {words[0]}, without spaces. {HOW_TO_AUTHENTICATE}")
    return words[1]


def user_of_key(key: str):
    """(user, token) for a valid key, noting its use; a 401 saying why not."""
    found = TOKEN_WITH_USER.fetch(hash_token(key))
    if not found:
        raise exceptions.AuthenticationFailed(_("Invalid token."))
    token, now = found[0], timezone.now()
    refused = refusal(token, now)
    if refused:
        raise exceptions.AuthenticationFailed(refused)
    note_use(token, now)
    return (token.user, token)


class TokenAuthentication(authentication.TokenAuthentication):
    keyword = "Bearer"

    def authenticate_header(self, request) -> str:
        return ", ".join(SCHEMES)  # a 401's WWW-Authenticate: both challenges

    def authenticate(self, request):
        try:
            header = authentication.get_authorization_header(request).decode("latin-1")
        except UnicodeError:  # pragma: no cover - latin-1 decodes any byte
            header = ""
        key = key_in(header)
        return None if key is None else self.authenticate_credentials(key)

    def authenticate_credentials(self, key):
        return user_of_key(key)
