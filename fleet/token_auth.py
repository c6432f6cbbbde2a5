"""API token authentication: DRF's, with the token and its user read by one prebuilt statement."""

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from fleet.prebuilt_select import PrebuiltSelect

TOKEN_WITH_USER = PrebuiltSelect(Token, key="key", joined=("user",))


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        found = TOKEN_WITH_USER.fetch(key)
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = found[0]
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
