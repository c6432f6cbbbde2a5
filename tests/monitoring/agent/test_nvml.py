import logging
import os
import pwd
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from monitoring.agent.metrics import HEALTH_EVERY_S, METRIC_KEYS
from monitoring.agent.nvml import ALL_LINKS, NvmlBackend, NvmlUnavailable

from .fake_nvml import (
    FUNCTION_NOT_FOUND,
    GPU_IS_LOST,
    NOT_FOUND,
    NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
    field_error,
    field_value,
    field_values,
    nvml_error,
    process,
    util_sample,
)

NOW = 1_795_000_000.0


def backend_for(*gpus, **kwargs):
    lib = FakeNvml(list(gpus), **kwargs)
    return NvmlBackend(lib=lib), lib


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_it_reads_every_declared_metric_of_a_healthy_gpu():
    backend, _ = backend_for(FakeGpu(0))

    [reading] = backend.sample(NOW)

    assert set(reading) == {"gpu", *METRIC_KEYS, "nvlink", "processes"}
    assert reading["gpu"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert reading["util_gpu"] == 97
    assert reading["util_mem"] == 41
    assert reading["mem_used_mib"] == 60211
    assert reading["temp_c"] == 71
    assert reading["power_w"] == 312.3
    assert (reading["sm_clock_mhz"], reading["mem_clock_mhz"]) == (1410, 1593)
    assert (reading["pcie_tx_kib_s"], reading["pcie_rx_kib_s"]) == (1200, 88000)
    assert reading["ecc_volatile"] == 2
    assert reading["clocks_event_reasons"] == 0x40
    assert reading["processes"] == []


def test_it_reports_null_when_nvml_does_not_support_a_field():
    backend, _ = backend_for(
        FakeGpu(0, nvmlDeviceGetTotalEccErrors=nvml_error(NOT_SUPPORTED)),
    )

    [reading] = backend.sample(NOW)

    assert reading["fan_pct"] is None
    assert reading["ecc_volatile"] is None
    assert reading["util_gpu"] == 97


def test_not_supported_fields_are_not_logged_as_failures(caplog):
    backend, _ = backend_for(FakeGpu(0))

    with caplog.at_level(logging.WARNING):
        backend.sample(NOW)

    assert caplog.records == []


def test_it_logs_a_function_missing_from_old_bindings_once_and_falls_back(caplog):
    backend, lib = backend_for(FakeGpu(0), missing={"nvmlDeviceGetCurrentClocksEventReasons"})

    with caplog.at_level(logging.WARNING):
        readings = [backend.sample(NOW + i)[0] for i in range(3)]

    assert [r["clocks_event_reasons"] for r in readings] == [0x40, 0x40, 0x40]
    assert lib.calls.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 3
    missing_lines = [r for r in caplog.records if "nvmlDeviceGetCurrentClocksEventReasons" in r.getMessage()]
    assert len(missing_lines) == 1


def test_a_function_the_driver_lacks_is_logged_once_and_not_called_again(caplog):
    backend, lib = backend_for(FakeGpu(0, nvmlDeviceGetPcieThroughput=nvml_error(FUNCTION_NOT_FOUND)))

    with caplog.at_level(logging.WARNING):
        readings = [backend.sample(NOW + i)[0] for i in range(3)]

    assert [r["pcie_rx_kib_s"] for r in readings] == [None, None, None]
    assert lib.calls.count("nvmlDeviceGetPcieThroughput") == 1
    assert len([r for r in caplog.records if "nvmlDeviceGetPcieThroughput" in r.getMessage()]) == 1


def test_an_error_on_one_gpu_does_not_stop_the_others(caplog):
    lost = FakeGpu(0)
    for name in list(lost.answers):
        if name not in ("nvmlDeviceGetUUID",):
            lost.answers[name] = nvml_error(GPU_IS_LOST)
    backend, _ = backend_for(lost, FakeGpu(1))

    with caplog.at_level(logging.WARNING):
        first, second = backend.sample(NOW)

    assert first["gpu"].endswith("0") and second["gpu"].endswith("1")
    assert all(first[key] is None for key in METRIC_KEYS)
    assert first["processes"] is None
    assert second["util_gpu"] == 97 and second["temp_c"] == 71
    assert any("GPU is lost" in r.getMessage() for r in caplog.records)


def test_an_unexpected_failure_reading_one_gpu_leaves_the_others_readable():
    broken = FakeGpu(0, nvmlDeviceGetComputeRunningProcesses=[SimpleNamespace(no_pid=True)])
    backend, _ = backend_for(broken, FakeGpu(1))

    first, second = backend.sample(NOW)

    assert first["gpu"].endswith("0") and first["processes"] is None
    assert second["util_gpu"] == 97


def test_a_process_whose_memory_nvml_cannot_tell_has_null_memory_and_its_owner():
    me = os.getpid()
    gpu = FakeGpu(0, nvmlDeviceGetComputeRunningProcesses=[process(me, None)])
    backend, _ = backend_for(gpu)

    [proc] = backend.sample(NOW)[0]["processes"]

    assert proc["pid"] == me
    assert proc["mem_used_mib"] is None
    assert proc["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert "pytest" in proc["cmdline"] or "python" in proc["cmdline"]
    assert abs(proc["started_at"] - time.time()) < 24 * 3600


def test_a_process_that_has_gone_keeps_its_gpu_memory_and_null_owner():
    gone = dead_pid()
    backend, _ = backend_for(FakeGpu(0, nvmlDeviceGetComputeRunningProcesses=[process(gone, 512)]))

    [proc] = backend.sample(NOW)[0]["processes"]

    assert proc == {
        "pid": gone,
        "user": None,
        "name": None,
        "cmdline": None,
        "mem_used_mib": 512,
        "sm_util": 0,
        "started_at": None,
        "run": None,
    }


def test_a_process_using_compute_and_graphics_is_listed_once_with_its_memory():
    gone = dead_pid()
    gpu = FakeGpu(
        0,
        nvmlDeviceGetComputeRunningProcesses=[process(gone, None)],
        nvmlDeviceGetGraphicsRunningProcesses=[process(gone, 300)],
    )
    backend, _ = backend_for(gpu)

    processes = backend.sample(NOW)[0]["processes"]

    assert [(p["pid"], p["mem_used_mib"]) for p in processes] == [(gone, 300)]


def test_processes_are_null_when_nvml_cannot_list_them():
    gpu = FakeGpu(
        0,
        nvmlDeviceGetComputeRunningProcesses=nvml_error(NOT_SUPPORTED),
        nvmlDeviceGetGraphicsRunningProcesses=nvml_error(NOT_SUPPORTED),
    )
    backend, _ = backend_for(gpu)

    assert backend.sample(NOW)[0]["processes"] is None


def test_each_process_gets_its_latest_sm_util_and_zero_without_recent_activity():
    busy, quiet = dead_pid(), dead_pid()
    gpu = FakeGpu(
        0,
        nvmlDeviceGetComputeRunningProcesses=[process(busy, 1000), process(quiet, 2000)],
        nvmlDeviceGetProcessUtilization=lambda since: [
            util_sample(busy, since + 10, 40),
            util_sample(busy, since + 20, 93),
        ],
    )
    backend, _ = backend_for(gpu)

    processes = backend.sample(NOW)[0]["processes"]

    assert {p["pid"]: p["sm_util"] for p in processes} == {busy: 93, quiet: 0}


def test_per_process_sm_util_is_null_where_the_driver_cannot_measure_it():
    gpu = FakeGpu(
        0,
        nvmlDeviceGetComputeRunningProcesses=[process(dead_pid(), 1000)],
        nvmlDeviceGetProcessUtilization=nvml_error(NOT_SUPPORTED),
    )
    backend, _ = backend_for(gpu)

    assert backend.sample(NOW)[0]["processes"][0]["sm_util"] is None


def test_it_lists_mig_instances_when_mig_is_enabled(caplog):
    instances = {
        0: FakeGpu(10, nvmlDeviceGetUUID="MIG-aaaa", nvmlDeviceGetName="NVIDIA A100-SXM4-80GB MIG 3g.40gb"),
        2: FakeGpu(12, nvmlDeviceGetUUID="MIG-bbbb", nvmlDeviceGetName="NVIDIA A100-SXM4-80GB MIG 1g.10gb"),
    }
    instances[2].answers["nvmlDeviceGetMemoryInfo"] = SimpleNamespace(total=9728 * 1024 * 1024, used=0, free=0)

    def mig_handle(index):
        if index not in instances:
            raise nvml_error(NOT_FOUND)
        return instances[index]

    gpu = FakeGpu(
        0,
        nvmlDeviceGetMigMode=[1, 1],
        nvmlDeviceGetMaxMigDeviceCount=7,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle,
        nvmlDeviceGetUtilizationRates=nvml_error(NOT_SUPPORTED),
    )
    backend, _ = backend_for(gpu, FakeGpu(1))

    with caplog.at_level(logging.WARNING):
        mig_gpu, plain_gpu = backend.gpus()
        [reading, _] = backend.sample(NOW)

    assert mig_gpu["mig"] is True
    assert mig_gpu["mig_devices"] == [
        {"index": 0, "uuid": "MIG-aaaa", "name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "memory_total_mib": 81920},
        {"index": 2, "uuid": "MIG-bbbb", "name": "NVIDIA A100-SXM4-80GB MIG 1g.10gb", "memory_total_mib": 9728},
    ]
    assert plain_gpu["mig"] is False and "mig_devices" not in plain_gpu
    assert reading["util_gpu"] is None
    assert caplog.records == []


def test_it_describes_each_gpu_for_the_hello():
    backend, _ = backend_for(FakeGpu(0), FakeGpu(1, nvmlDeviceGetMigMode=nvml_error(NOT_SUPPORTED)))

    first, second = backend.gpus()

    assert first == {
        "index": 0,
        "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total_mib": 81920,
        "power_limit_w": 400.0,
        "pcie_gen": 4,
        "pcie_width": 16,
        "pci_bus_id": "00000000:07:00.0",
        "mig": False,
    }
    assert second["index"] == 1 and second["mig"] is False
    assert backend.driver_version() == "550.54.15"
    assert backend.cuda_version() == "12.4"


def test_a_gpu_without_a_readable_uuid_is_left_out():
    backend, _ = backend_for(FakeGpu(0, nvmlDeviceGetUUID=nvml_error(GPU_IS_LOST)), FakeGpu(1))

    assert [g["index"] for g in backend.gpus()] == [1]
    assert len(backend.sample(NOW)) == 1


def test_it_raises_a_clear_error_when_nvml_cannot_start():
    import pynvml

    backend, _ = backend_for(FakeGpu(0), init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    with pytest.raises(NvmlUnavailable, match="NVML could not start: NVML Shared Library Not Found"):
        backend.start()


def test_it_reads_the_health_counters_dcgm_exporter_reports():
    backend, _ = backend_for(FakeGpu(0, nvmlDeviceGetRemappedRows=(5, 1, 1, 0)))

    [reading] = backend.sample(NOW)

    assert reading["mem_temp_c"] == 79
    assert (reading["util_enc"], reading["util_dec"]) == (0, 3)
    assert reading["mem_reserved_mib"] == 529
    assert reading["energy_mj"] == 9_876_543_210
    assert reading["pcie_replays"] == 0
    assert (reading["remapped_correctable"], reading["remapped_uncorrectable"]) == (5, 1)
    assert (reading["remap_pending"], reading["remap_failure"]) == (1, 0)
    # Ampere retires no pages: NVML answers NOT_SUPPORTED, which is null, never 0.
    assert (reading["retired_sbe"], reading["retired_dbe"], reading["retired_pending"]) == (None, None, None)
    assert (reading["xid_count"], reading["xid_last"]) == (0, 0)


def test_every_health_field_is_null_where_nvml_cannot_give_it():
    unsupported = nvml_error(NOT_SUPPORTED)
    gpu = FakeGpu(
        0,
        nvmlDeviceGetFieldValues=unsupported,
        nvmlDeviceGetEncoderUtilization=unsupported,
        nvmlDeviceGetDecoderUtilization=unsupported,
        nvmlDeviceGetTotalEnergyConsumption=unsupported,
        nvmlDeviceGetPcieReplayCounter=unsupported,
        nvmlDeviceGetRemappedRows=unsupported,
        nvmlDeviceRegisterEvents=unsupported,
    )
    backend, _ = backend_for(gpu, missing={"nvmlEventSetCreate"})

    [reading] = backend.sample(NOW)

    health = [key for key in METRIC_KEYS if key not in ("util_gpu", "util_mem", "mem_used_mib", "temp_c", "power_w")]
    health = [key for key in health if key not in ("sm_clock_mhz", "mem_clock_mhz", "pcie_tx_kib_s", "pcie_rx_kib_s")]
    health = [key for key in health if key not in ("ecc_volatile", "clocks_event_reasons", "mem_reserved_mib")]
    assert {key: reading[key] for key in health} == dict.fromkeys(health)


def test_xid_errors_are_counted_per_gpu_with_the_latest_code():
    first, second = FakeGpu(0), FakeGpu(1)
    backend, lib = backend_for(first, second)
    backend.sample(NOW)
    lib.xid_events += [(second, 79), (second, 48), (first, 13)]

    a, b = backend.sample(NOW + 1)
    assert (a["xid_count"], a["xid_last"], b["xid_count"], b["xid_last"]) == (1, 13, 2, 48)
    a, b = backend.sample(NOW + 2)
    assert (a["xid_count"], b["xid_count"]) == (1, 2)  # a counter: it keeps what it saw


def test_a_gpu_that_cannot_register_for_xid_events_reports_them_as_null():
    backend, _ = backend_for(FakeGpu(0, nvmlDeviceRegisterEvents=nvml_error(NOT_SUPPORTED)), FakeGpu(1))

    a, b = backend.sample(NOW)

    assert (a["xid_count"], a["xid_last"]) == (None, None)
    assert (b["xid_count"], b["xid_last"]) == (0, 0)


def test_nvlink_throughput_is_the_rate_of_the_drivers_cumulative_counters():
    counters = {"tx": 1_000_000, "rx": 2_000_000}

    def links(fields):
        return field_values({138: field_value(counters["tx"]), 139: field_value(counters["rx"])})(fields)

    backend, _ = backend_for(FakeGpu(0, nvmlDeviceGetFieldValues=links))

    [first] = backend.sample(NOW)
    counters["tx"] += 4_000_000
    counters["rx"] += 1_000_000
    [second] = backend.sample(NOW + 2)

    assert (first["nvlink_tx_kib_s"], first["nvlink_rx_kib_s"]) == (None, None)  # no rate from one reading
    assert (second["nvlink_tx_kib_s"], second["nvlink_rx_kib_s"]) == (2_000_000, 500_000)
    assert second["mem_temp_c"] is None  # this fake answers only the NVLink fields


def nvlink_gpu(counters: dict, link_count=None, states=None, **answers):
    """A GPU whose NVLink counters answer per link (scopeId = the link) and over all links (ALL_LINKS)."""
    link_count = field_value(len(counters["tx"])) if link_count is None else link_count

    def fields(requested):
        answers = []
        for field in requested:
            field_id, scope = field if isinstance(field, tuple) else (field, None)
            if field_id == 91:
                answers.append(link_count)
            elif field_id in (138, 139):
                per_link = counters["tx" if field_id == 138 else "rx"]
                answers.append(field_value(sum(per_link) if scope == ALL_LINKS else per_link[scope]))
            else:
                answers.append(field_error())
        return answers

    states = states or [1] * len(counters["tx"])
    return FakeGpu(0, nvmlDeviceGetFieldValues=fields, nvmlDeviceGetNvLinkState=lambda link: states[link], **answers)


def test_nvlink_throughput_per_link_is_each_links_counter_rate_and_null_while_a_link_is_down():
    counters = {"tx": [1_000, 5_000, 7_000], "rx": [2_000, 2_000, 9_000]}
    backend, _ = backend_for(nvlink_gpu(counters, states=[1, 0, 1]))

    [first] = backend.sample(NOW)
    counters["tx"] = [1_000 + 2_000_000, 5_000, 7_000 + 600_000]
    counters["rx"] = [2_000 + 400_000, 2_000, 9_000]
    [second] = backend.sample(NOW + 2)

    assert first["nvlink"] == [{"tx_kib_s": None, "rx_kib_s": None}] * 3  # no rate from one reading
    assert second["nvlink"] == [
        {"tx_kib_s": 1_000_000, "rx_kib_s": 200_000},
        {"tx_kib_s": None, "rx_kib_s": None},  # link 1 is down: null, never 0
        {"tx_kib_s": 300_000, "rx_kib_s": 0},
    ]
    assert (second["nvlink_tx_kib_s"], second["nvlink_rx_kib_s"]) == (1_300_000, 200_000)  # totals as before


def test_the_health_counters_are_read_once_in_health_every_s_and_again_when_the_clock_goes_back():
    backend, lib = backend_for(FakeGpu(0))

    readings = [backend.sample(NOW + s)[0] for s in (0, 1, HEALTH_EVERY_S - 1, HEALTH_EVERY_S, HEALTH_EVERY_S - 5)]

    assert lib.calls.count("nvmlDeviceGetTotalEnergyConsumption") == 3  # at 0, at HEALTH_EVERY_S, after going back
    assert {reading["energy_mj"] for reading in readings} == {9_876_543_210}  # kept in between


def test_a_gpu_whose_nvml_does_not_support_nvlink_reports_no_links_and_null_totals():
    backend, lib = backend_for(FakeGpu(0))  # the default fake answers NOT_SUPPORTED for every NVLink field

    backend.sample(NOW)
    [reading] = backend.sample(NOW + 1)

    assert (reading["nvlink"], reading["nvlink_tx_kib_s"]) == (None, None)
    assert "nvmlDeviceGetNvLinkState" not in lib.calls


def test_a_link_whose_counter_is_not_supported_is_null_and_link_states_are_read_at_the_health_cadence():
    counters = {"tx": [10, 20], "rx": [30, 40]}
    gpu = nvlink_gpu(counters)
    backend, lib = backend_for(gpu)
    backend.sample(NOW)
    fields = gpu.answers["nvmlDeviceGetFieldValues"]
    gpu.answers["nvmlDeviceGetFieldValues"] = lambda requested: [
        field_error() if f == (138, 1) else answer for f, answer in zip(requested, fields(requested), strict=True)
    ]
    [reading] = backend.sample(NOW + 1)

    assert reading["nvlink"] == [{"tx_kib_s": 0, "rx_kib_s": 0}, {"tx_kib_s": None, "rx_kib_s": 0}]
    assert lib.calls.count("nvmlDeviceGetNvLinkState") == 2  # once per link, not once per sample
