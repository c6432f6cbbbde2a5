"""Seed GPU models from the vendors' datasheets.

Sources (dense figures, no sparsity): NVIDIA V100 datasheet (SXM2 32 GB); NVIDIA A100 datasheet
(SXM4 40 GB and 80 GB); NVIDIA H100 datasheet (SXM5); NVIDIA H200 datasheet (SXM); NVIDIA L40S
datasheet; NVIDIA Ada Lovelace architecture whitepaper (GeForce RTX 4090, FP16/BF16 with FP32
accumulate); NVIDIA T4 datasheet. Prices per GPU-hour are example defaults (USD), meant to be set by
an admin.
"""

from decimal import Decimal

from django.db import migrations

# name, memory GiB, bandwidth GB/s, FP32, TF32, BF16, FP16 TFLOPS, TDP W, interconnect, USD/GPU-h, NVML names
MODELS = [
    ("V100 SXM2 32GB", 32, 900, 15.7, None, None, 125.0, 300, "NVLink 2 (300 GB/s)", "1.50",
     "Tesla V100-SXM2-32GB,Tesla V100-SXM2-16GB,Tesla V100-PCIE-32GB,Tesla V100-PCIE-16GB"),
    ("A100 40GB", 40, 1555, 19.5, 156.0, 312.0, 312.0, 400, "NVLink 3 (600 GB/s)", "2.00",
     "NVIDIA A100-SXM4-40GB,NVIDIA A100-PCIE-40GB"),
    ("A100 80GB", 80, 2039, 19.5, 156.0, 312.0, 312.0, 400, "NVLink 3 (600 GB/s)", "2.50",
     "NVIDIA A100-SXM4-80GB,NVIDIA A100 80GB PCIe"),
    ("H100 SXM", 80, 3350, 67.0, 494.5, 989.5, 989.5, 700, "NVLink 4 (900 GB/s)", "4.00",
     "NVIDIA H100 80GB HBM3,NVIDIA H100"),
    ("H200", 141, 4800, 67.0, 494.5, 989.5, 989.5, 700, "NVLink 4 (900 GB/s)", "5.00",
     "NVIDIA H200,NVIDIA H200 141GB HBM3e"),
    ("L40S", 48, 864, 91.6, 183.0, 362.05, 362.05, 350, "PCIe 4.0 x16", "1.50", "NVIDIA L40S"),
    ("RTX 4090", 24, 1008, 82.6, 82.6, 165.2, 165.2, 450, "PCIe 4.0 x16", "0.60", "NVIDIA GeForce RTX 4090"),
    ("T4", 16, 320, 8.1, None, None, 65.0, 70, "PCIe 3.0 x16", "0.35", "Tesla T4"),
]


def seed(apps, schema_editor):
    GPUModel = apps.get_model("fleet", "GPUModel")
    for name, mem, bw, fp32, tf32, bf16, fp16, tdp, link, price, nvml_names in MODELS:
        GPUModel.objects.update_or_create(
            name=name,
            defaults=dict(
                memory_gib=mem, memory_bandwidth_gb_s=bw, fp32_tflops=fp32, tf32_tflops=tf32,
                bf16_tflops=bf16, fp16_tflops=fp16, tdp_w=tdp, interconnect=link,
                cost_per_gpu_hour=Decimal(price), nvml_names=nvml_names,
            ),
        )


def unseed(apps, schema_editor):
    apps.get_model("fleet", "GPUModel").objects.filter(name__in=[m[0] for m in MODELS]).delete()


class Migration(migrations.Migration):
    dependencies = [("fleet", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
