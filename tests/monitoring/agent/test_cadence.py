"""Slow health fields are sent when they change or every every_s seconds; the rest of a sample always."""

from monitoring.agent.cadence import Cadence
from monitoring.agent.metrics import BY_KEY, NVLINK_EVERY_S, SLOW_KEYS


def frame(ts, **values):
    samples = []
    for gpu in ("GPU-a", "GPU-b"):
        sample = {"ts": ts, "gpu": gpu, "util_gpu": 50, **dict.fromkeys(SLOW_KEYS, 0)}
        sample.update(values.get(gpu, {}))
        samples.append(sample)
    return {"type": "samples", "seq": 1, "samples": samples}


def test_unchanged_slow_fields_travel_once_per_period_and_changes_at_once():
    cadence, every = Cadence(), BY_KEY["xid_count"].every_s

    first = cadence.thin(frame(1000.0))
    second = cadence.thin(frame(1001.0, **{"GPU-b": {"xid_count": 1, "xid_last": 79}}))
    due = cadence.thin(frame(1000.0 + every))

    assert all(set(SLOW_KEYS) <= set(sample) for sample in first["samples"])
    a, b = second["samples"]
    assert not set(SLOW_KEYS) & set(a) and a["util_gpu"] == 50
    assert {key for key in SLOW_KEYS if key in b} == {"xid_count", "xid_last"}
    assert all(set(SLOW_KEYS) <= set(sample) for sample in due["samples"])


def test_a_field_that_becomes_unreadable_is_sent_at_once_as_a_change():
    cadence = Cadence()
    cadence.thin(frame(1000.0))
    [a, _] = cadence.thin(frame(1001.0, **{"GPU-a": {"energy_mj": None}}))["samples"]
    assert "energy_mj" in a and a["energy_mj"] is None


def test_per_link_nvlink_figures_travel_every_period_however_they_change_and_at_once_when_links_go():
    cadence = Cadence()
    links = [{"tx_kib_s": 5, "rx_kib_s": 6}]
    sent = [
        cadence.thin(
            frame(1000.0 + t, **{"GPU-a": {"nvlink": [{"tx_kib_s": t, "rx_kib_s": t}]}, "GPU-b": {"nvlink": None}})
        )
        for t in range(int(NVLINK_EVERY_S) + 1)
    ]
    gone = cadence.thin(frame(1000.0 + NVLINK_EVERY_S + 1, **{"GPU-a": {"nvlink": None}, "GPU-b": {"nvlink": links}}))

    assert [t for t, f in enumerate(sent) if "nvlink" in f["samples"][0]] == [0, int(NVLINK_EVERY_S)]
    assert [t for t, f in enumerate(sent) if "nvlink" in f["samples"][1]] == [0, int(NVLINK_EVERY_S)]
    assert sent[0]["samples"][1]["nvlink"] is None  # a GPU without NVLink says so, at the same pace
    assert [s["nvlink"] for s in gone["samples"]] == [None, links]  # a change of links goes at once
