"""API token authentication: `Authorization: Token <key>`, the token and its user read by one prebuilt
statement from the key's hash (accounts/tokens.py)."""

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.tokens import note_use, refusal
from fleet.prebuilt_select import PrebuiltSelect
from inventory.node_tokens import hash_token

TOKEN_WITH_USER = PrebuiltSelect(ApiToken, key="key_hash", joined=("user",))


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        found = TOKEN_WITH_USER.fetch(hash_token(key))
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, now = found[0], timezone.now()
        refused = refusal(token, now)
        if refused:
            raise exceptions.AuthenticationFailed(refused)
        note_use(token, now)
        return (token.user, token)
