"""/healthz reports the database, Redis and the broker; 503 names what is down."""

import pytest

from fleet.embedded import EmbeddedRedis


def test_it_answers_200_when_all_parts_are_up(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "up"
    assert body["parts"] == {"database": "up", "redis": "up", "broker": "up"}


@pytest.fixture
def own_redis(tmp_path, settings):
    redis = EmbeddedRedis(tmp_path / "redis")
    settings.REDIS_URL = settings.CELERY_BROKER_URL = redis.start()
    yield redis
    redis.stop()


def test_it_answers_503_naming_redis_when_redis_stops(client, db, own_redis):
    assert client.get("/healthz").status_code == 200
    own_redis.stop()
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert "redis" in body["down"]
    assert body["parts"]["database"] == "up"
    assert body["parts"]["redis"].startswith("down: ")


def test_it_names_the_broker_when_only_the_broker_is_down(client, db, settings):
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:1//"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["down"] == ["broker"]
