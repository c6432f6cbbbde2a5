"""The CUDA and cuDNN a torch was built with, read without importing it, and shown as people write them."""

from training.workloads.torch_build import built_cuda, cudnn_text, cudnn_wheel


def test_the_cpu_build_in_the_test_environment_has_no_cuda():
    import torch

    assert built_cuda() == torch.version.cuda is None


def test_cudnn_numbers_read_as_versions():
    assert cudnn_text(90100) == "9.1.0"
    assert cudnn_text(8905) == "8.9.5"
    assert cudnn_text(None) is None and cudnn_text(0) is None


def test_the_cudnn_wheel_names_the_version():
    assert cudnn_wheel({"numpy": "2.1.0", "nvidia-cudnn-cu12": "9.1.0.70"}) == "9.1.0.70"
    assert cudnn_wheel({"numpy": "2.1.0"}) is None
