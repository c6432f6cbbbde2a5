"""fleet_add_node prints a token once and stores only its hash; fleet_rotate_token replaces it."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from inventory.models import Node
from inventory.node_tokens import hash_token
from inventory.nodes import node_for_token


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def printed_token(output: str) -> str:
    return output.strip().splitlines()[-1]


def test_add_node_prints_a_token_and_stores_only_its_hash(db):
    token = printed_token(run("fleet_add_node", "gpu-01"))
    node = Node.objects.get(hostname="gpu-01")
    assert len(token) >= 40
    assert node.token_hash == hash_token(token)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM fleet_node")
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert token not in stored
    assert node_for_token(token) == node


def test_add_node_refuses_an_existing_hostname_and_keeps_its_token(db):
    token = printed_token(run("fleet_add_node", "gpu-01"))
    with pytest.raises(CommandError, match="already exists"):
        run("fleet_add_node", "gpu-01")
    assert node_for_token(token).hostname == "gpu-01"
    assert Node.objects.count() == 1


def test_rotate_token_makes_the_old_token_useless(db):
    old = printed_token(run("fleet_add_node", "gpu-01"))
    new = printed_token(run("fleet_rotate_token", "gpu-01"))
    assert new != old
    assert node_for_token(old) is None
    assert node_for_token(new).hostname == "gpu-01"


def test_rotate_token_for_an_unknown_node_fails_clearly(db):
    with pytest.raises(CommandError, match="no node named 'gpu-99'"):
        run("fleet_rotate_token", "gpu-99")


def test_a_wrong_or_empty_token_finds_no_node(db):
    run("fleet_add_node", "gpu-01")
    assert node_for_token("not-the-token") is None
    assert node_for_token("") is None
