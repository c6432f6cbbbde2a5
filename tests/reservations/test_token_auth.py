"""API tokens: the right token is its user, in one query; a wrong one or an inactive user's is a 401."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.authentication import TokenAuthentication
from accounts.models import ApiToken
from accounts.tokens import issue
from reservations.models import Reservation
from tests.support.reservations import api_client, at

pytestmark = pytest.mark.django_db
LIST = reverse("fleet:api-reservations")


def test_a_token_is_its_user_and_token_read_in_one_query(cast, django_assert_num_queries):
    token, key = issue(cast["teammate"], "laptop")
    TokenAuthentication().authenticate_credentials(key)  # notes its first use
    with django_assert_num_queries(1):
        user, auth = TokenAuthentication().authenticate_credentials(key)
        seen = (user.username, user.is_staff, auth.pk, auth.user.pk)
    assert seen == ("bob", False, token.pk, cast["teammate"].pk)
    assert ApiToken.objects.get().last_used_at is not None


def test_the_api_books_as_the_tokens_user(cast, fleet_gpus):
    key = issue(cast["outsider"], "script")[1]
    body = {"gpus": [fleet_gpus[0].pk], "start": at(1).isoformat(), "end": at(2).isoformat()}
    response = api_client(key).post(LIST, body, format="json")
    assert response.status_code == 201 and response.json()["user"] == "eve"
    assert Reservation.objects.get().user == cast["outsider"]


@pytest.mark.parametrize(
    "key, detail",
    [
        ("0" * 40, "Invalid token."),
        ("gft_\x00\x7f", "Invalid token."),
        ("x'OR'1'='1", "Invalid token."),
        ("inactive", "User inactive or deleted."),
    ],
    ids=["unknown", "NUL and DEL", "quote in the key", "inactive user"],
)
def test_a_wrong_token_is_a_401_and_books_nothing(cast, fleet_gpus, key, detail):
    if key == "inactive":
        cast["owner"].is_active = False
        cast["owner"].save()
        key = issue(cast["owner"], "script")[1]
    body = {"gpus": [fleet_gpus[0].pk], "start": at(1).isoformat(), "end": at(2).isoformat()}
    response = api_client(key).post(LIST, body, format="json")
    assert response.status_code == 401 and response.json()["detail"] == detail
    assert response["WWW-Authenticate"] == "Bearer, Token"
    assert not Reservation.objects.exists()


def test_no_credentials_is_a_401_that_asks_for_a_token(fleet_gpus):
    response = APIClient().get(LIST)
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer, Token"
    assert "Authorization: Bearer <token>" in response.json()["detail"]


@pytest.mark.parametrize("scheme", ["Bearer", "Token", "bearer"])
def test_a_token_is_taken_with_bearer_or_token(cast, fleet_gpus, scheme):
    key = issue(cast["owner"], "script")[1]
    response = APIClient().get(LIST, HTTP_AUTHORIZATION=f"{scheme} {key}")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("header", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer a b"])
def test_an_unknown_scheme_or_a_malformed_header_is_a_401_naming_the_schemes(cast, fleet_gpus, header):
    response = APIClient().get(LIST, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer, Token"
    assert "Authorization: Bearer <token>" in response.json()["detail"], response.json()


def test_a_logged_in_browser_still_uses_the_api_without_a_token(client, cast, fleet_gpus):
    client.force_login(cast["owner"])
    assert client.get(LIST).status_code == 200
