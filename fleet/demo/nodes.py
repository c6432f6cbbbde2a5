"""The demo fleet's shape, shared by the demo data (Django) and the demo supervisor (no Django)."""

# hostname → (GPU model in the inventory, the name NVML reports, memory MiB, power limit W, PCIe gen)
DEMO_NODES = {
    "gpu-h100-01": ("H100 SXM", "NVIDIA H100 80GB HBM3", 81559, 700, 5),
    "gpu-a100-01": ("A100 80GB", "NVIDIA A100-SXM4-80GB", 81920, 400, 4),
    "gpu-a100-02": ("A100 40GB", "NVIDIA A100-SXM4-40GB", 40960, 400, 4),
    "gpu-l40s-01": ("L40S", "NVIDIA L40S", 46068, 350, 4),
}
GPUS_PER_NODE = 8
