"""`POST /api/token/`: a script trades a username and password for a new named API token (shown once);
`/api/token/current/` says whose the calling token is (GET) and revokes it (DELETE), for a command line's
whoami and logout."""

from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required
from django.utils.decorators import method_decorator
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiToken
from accounts.tokens import MAX_EXPIRY_DAYS, issue, revoke
from fleet.api.fields import StrictCharField


class WrongCredentials(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "Wrong username or password."
    default_code = "wrong_credentials"


class TokenRequestSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=4096, trim_whitespace=False, write_only=True)
    name = StrictCharField(max_length=100)
    expires_in_days = serializers.IntegerField(min_value=1, max_value=MAX_EXPIRY_DAYS, required=False, allow_null=True)


class NewTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The key: send it as `Authorization: Bearer <key>`. Shown only here.")
    name = serializers.CharField()
    prefix = serializers.CharField()
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)


@method_decorator(login_not_required, name="dispatch")
class TokenCreateView(APIView):
    authentication_classes = []
    permission_classes = [permissions.AllowAny]
    error_codes = ["429"]  # a locked-out username and address (accounts/lockout.py), declared in the schema

    @extend_schema(request=TokenRequestSerializer, responses={201: NewTokenSerializer}, auth=[])
    def post(self, request):
        given = TokenRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:
            raise WrongCredentials()
        token, key = issue(user, data["name"], data.get("expires_in_days"))
        body = {"token": key, "name": token.name, "prefix": token.prefix, "created": token.created}
        body["expires_at"] = token.expires_at
        return Response(NewTokenSerializer(body).data, status=status.HTTP_201_CREATED)


class CurrentTokenSerializer(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField()
    name = serializers.CharField(help_text="The token's name.")
    prefix = serializers.CharField()
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)


class NoToken(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "This request was not signed with an API token; send Authorization: Bearer <key>."
    default_code = "no_token"


class CurrentTokenView(APIView):
    """The token this request was signed with: whose it is, and revoking it (a command line's logout)."""

    @extend_schema(responses=CurrentTokenSerializer)
    def get(self, request):
        token = self._token(request)
        body = {"username": request.user.get_username(), "is_staff": request.user.is_staff, "name": token.name}
        body.update(prefix=token.prefix, created=token.created, expires_at=token.expires_at)
        return Response(CurrentTokenSerializer(body).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        revoke(self._token(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _token(request) -> ApiToken:
        if not isinstance(request.auth, ApiToken):
            raise NoToken()
        return request.auth
