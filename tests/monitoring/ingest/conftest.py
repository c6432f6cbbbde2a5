"""Fixtures of the telemetry tests: nodes with tokens, scripted agents, and a clean ingest per test."""

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.db import connections

from inventory.nodes import add_node
from monitoring.ingest.batcher import close_batcher
from monitoring.ingest.presence import close_sweeper
from monitoring.storage.partitions import PARTITIONS
from tests.monitoring.ingest.agents import Agent


@pytest.fixture(autouse=True)
def forget_partitions():
    """Partitions made inside a rolled-back test transaction are gone; the ingest must not remember them."""
    PARTITIONS.reset()
    yield
    PARTITIONS.reset()


@pytest.fixture
def node_token(transactional_db, gpu_models):
    """A registered node, gpu-01, and its agent token."""
    node, token = add_node("gpu-01")
    return node, token


@pytest.fixture
async def agents(node_token):
    """Make agents that connect through the real routing; everything they started is stopped after the test."""
    made = []

    def make(token: str | None = node_token[1], hostname: str = "gpu-01") -> Agent:
        agent = Agent(token, hostname)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        await agent.stop()
    await close_batcher()
    await close_sweeper()
    # The ORM thread of async code keeps its connection; the test database can only be dropped without it.
    await sync_to_async(connections.close_all, thread_sensitive=True)()


def orm(function):
    """Run sync ORM code from an async test."""
    return database_sync_to_async(function)
