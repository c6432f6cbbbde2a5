"""Match the GPU names NVML reports to the GPU models of the inventory."""

from inventory.models import GPUModel


def model_for_nvml_name(nvml_name: str) -> GPUModel | None:
    wanted = nvml_name.strip().lower()
    if not wanted:
        return None
    for model in GPUModel.objects.all():
        names = [model.name, *model.nvml_names.split(",")]
        if any(wanted == name.strip().lower() for name in names if name.strip()):
            return model
    return None
