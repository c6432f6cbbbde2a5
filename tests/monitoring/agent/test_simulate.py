import itertools
import time

import pytest

from monitoring.agent.metrics import METRIC_KEYS, THERMAL_REASONS_MASK, in_bounds
from monitoring.agent.simulate import MODEL_NAMES, Simulator, gpu_uuid

START = 1_795_000_000.0
HOURS = 3600


def readings_at(sim, elapsed):
    return sim.sample(START + elapsed)


def by_role(sim, role, elapsed):
    return [r for r, name in zip(readings_at(sim, elapsed), sim.roles, strict=True) if name == role]


def test_the_mixed_scenario_on_eight_gpus_has_training_idle_forgotten_and_throttling():
    sim = Simulator(8, "gpu-01", started_at=START)
    readings = readings_at(sim, 600)

    forgotten = [r for r in readings if r["processes"] and r["util_gpu"] == 0]
    idle = [r for r in readings if not r["processes"]]
    throttling = [r for r in readings if r["clocks_event_reasons"] & THERMAL_REASONS_MASK]
    training = [r for r in readings if r["processes"] and r not in throttling and r["util_gpu"] > 0]
    assert (len(training), len(idle), len(forgotten), len(throttling)) == (4, 2, 1, 1)


def test_a_forgotten_process_stays_at_zero_percent_holding_its_memory_for_hours():
    sim = Simulator(8, "gpu-01", scenario="mixed", started_at=START)

    seen = [by_role(sim, "forgotten", elapsed)[0] for elapsed in (60, 1 * HOURS, 5 * HOURS, 30 * HOURS)]

    assert {r["util_gpu"] for r in seen} == {0}
    assert all(r["mem_used_mib"] > 0.8 * sim.model.memory_total_mib for r in seen)
    owners = {(p["pid"], p["user"], p["sm_util"], p["started_at"]) for r in seen for p in r["processes"]}
    assert len(owners) == 1
    _pid, user, sm_util, started_at = owners.pop()
    assert (user, sm_util) == ("carol", 0)
    assert START - started_at > 2 * 24 * HOURS


def test_a_throttling_gpu_heats_up_then_sets_the_thermal_bit_and_drops_its_clock():
    sim = Simulator(1, "gpu-02", scenario="throttling", started_at=START)

    [cool] = readings_at(sim, 0)
    [hot] = readings_at(sim, 900)

    assert cool["temp_c"] < 70 and cool["clocks_event_reasons"] & THERMAL_REASONS_MASK == 0
    assert 85 <= hot["temp_c"] <= 90
    assert hot["clocks_event_reasons"] & THERMAL_REASONS_MASK
    assert hot["sm_clock_mhz"] < cool["sm_clock_mhz"] == sim.model.sm_clock_max_mhz


def test_training_dips_every_thirty_seconds_or_so():
    sim = Simulator(1, "gpu-03", scenario="training", started_at=START)

    utils = [readings_at(sim, t)[0]["util_gpu"] for t in range(120)]

    dip_starts = [t for t in range(1, 120) if utils[t] < 20 <= utils[t - 1]]
    assert len(dip_starts) == 4
    assert {b - a for a, b in itertools.pairwise(dip_starts)} == {30}
    assert sum(u > 90 for u in utils) > 100


def test_idle_gpus_have_no_processes_and_no_load():
    sim = Simulator(2, "gpu-04", scenario="idle", started_at=START)

    for reading in readings_at(sim, 42):
        assert reading["processes"] == [] and reading["util_gpu"] == 0
        assert reading["mem_used_mib"] < 100


def test_the_same_seed_tells_the_same_story_and_uuids_survive_a_restart():
    first = Simulator(8, "gpu-05", started_at=START)
    restarted = Simulator(8, "gpu-05", started_at=START)
    other_node = Simulator(8, "gpu-06", started_at=START)

    assert first.sample(START + 77) == restarted.sample(START + 77)
    assert [g["uuid"] for g in first.gpus()] == [g["uuid"] for g in restarted.gpus()]
    assert first.gpus()[3]["uuid"] == gpu_uuid("gpu-05", 3)
    assert not {g["uuid"] for g in first.gpus()} & {g["uuid"] for g in other_node.gpus()}


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_every_simulated_model_gives_plausible_readings(model):
    sim = Simulator(8, "gpu-07", started_at=START, model=model)

    assert sim.gpus()[0]["name"] == model
    for elapsed in (0, 31, 600, 7200):
        for reading in readings_at(sim, elapsed):
            for key in METRIC_KEYS:
                value = reading[key]
                assert value is None or in_bounds(key, value), (key, value)
            assert reading["mem_used_mib"] <= sim.model.memory_total_mib
            assert reading["power_w"] <= sim.model.power_limit_w


def test_processes_have_owners_and_plausible_command_lines():
    sim = Simulator(8, "gpu-08", started_at=START)

    processes = [p for r in readings_at(sim, 100) for p in r["processes"]]

    assert {p["user"] for p in processes} <= {"alice", "bob", "carol"}
    assert any(p["cmdline"].startswith("python train.py --lr 3e-4") for p in processes)
    assert all(p["started_at"] < START for p in processes)


def test_a_host_name_that_mentions_a_model_gets_that_model_unless_one_is_named():
    assert Simulator(1, "gpu-h100-01").model.name == "NVIDIA H100 80GB HBM3"
    assert Simulator(1, "gpu-l40s-01").model.name == "NVIDIA L40S"
    named = Simulator(1, "gpu-a100-02", model="NVIDIA A100-SXM4-40GB")
    assert named.gpus()[0]["memory_total_mib"] == 40960
    with pytest.raises(ValueError, match="unknown GPU model"):
        Simulator(1, "gpu-01", model="NVIDIA Imaginary 1TB")


def test_an_unknown_scenario_is_refused():
    with pytest.raises(ValueError, match="unknown scenario"):
        Simulator(2, "gpu-09", scenario="chaos")


def test_the_simulation_shows_rare_xid_errors_and_a_gpu_with_remapped_rows():
    from monitoring.agent.simulate_health import XID_FIRST_S, XID_PERIOD_S

    simulator = Simulator(8, "gpu-a100-07", seed=4, started_at=1_000_000.0, model="NVIDIA A100-SXM4-80GB")
    early = simulator.sample(1_000_000.0 + XID_FIRST_S - 1)
    later = simulator.sample(1_000_000.0 + XID_FIRST_S + 2 * XID_PERIOD_S)

    assert [r["xid_count"] for r in early] == [0] * 8
    assert [r["xid_count"] for r in later] == [0, 0, 0, 0, 3, 0, 0, 0]  # only GPU seed % 8
    assert later[4]["xid_last"] in (13, 31, 43)
    assert (later[1]["remapped_correctable"], later[1]["remap_pending"]) == (3, 1)  # seed % 4 == 0: GPU 1
    assert all(r["remap_pending"] == 0 for i, r in enumerate(later) if i != 1)
    assert later[0]["energy_mj"] > early[0]["energy_mj"] > 0
    assert later[0]["mem_temp_c"] is not None and later[0]["retired_sbe"] is None  # HBM; Ampere retires no pages


def test_boards_without_hbm_or_nvlink_report_those_as_null():
    [reading] = Simulator(1, "gpu-4090-01", seed=1, model="NVIDIA GeForce RTX 4090").sample(time.time())
    assert (reading["mem_temp_c"], reading["nvlink_tx_kib_s"], reading["remapped_correctable"]) == (None, None, None)
    assert reading["nvlink"] is None


@pytest.mark.parametrize(
    ("model", "links"), [("NVIDIA A100-SXM4-80GB", 12), ("NVIDIA H100 80GB HBM3", 18), ("NVIDIA L40S", 0)]
)
def test_nvlink_boards_report_each_link_and_the_links_add_up_to_the_total(model, links):
    for reading in Simulator(8, "gpu-node-01", seed=3, model=model).sample(1_000_000.0 + 60):
        if not links:
            assert (reading["nvlink"], reading["nvlink_rx_kib_s"]) == (None, None)
            continue
        assert len(reading["nvlink"]) == links
        assert sum(link["tx_kib_s"] for link in reading["nvlink"]) == reading["nvlink_tx_kib_s"]
        assert sum(link["rx_kib_s"] for link in reading["nvlink"]) == reading["nvlink_rx_kib_s"]
