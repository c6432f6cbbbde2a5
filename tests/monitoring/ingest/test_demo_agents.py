"""`make demo`'s simulated agents report the GPU models the demo seeded, so their hellos confirm them."""

from fleet.demo.data import DEMO_NODES
from fleet.demo.processes import DEMO_GPU_MODELS, background_processes
from monitoring.agent.simulate import MODEL_NAMES


def test_each_demo_node_simulates_the_model_it_was_seeded_with():
    assert DEMO_GPU_MODELS == {hostname: nvml_name for hostname, (_, nvml_name, *_) in DEMO_NODES.items()}
    assert set(DEMO_GPU_MODELS.values()) <= set(MODEL_NAMES)


def test_the_demo_starts_each_agent_with_its_model():
    agents = dict(background_processes(8000, dict.fromkeys(DEMO_NODES, "token")))
    for hostname, nvml_name in DEMO_GPU_MODELS.items():
        argv = agents[f"agent-{hostname}"]
        assert argv[argv.index("--gpu-model") + 1] == nvml_name
