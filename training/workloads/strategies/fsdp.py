"""FSDP: each torchrun rank holds a shard of the model (FSDP2), gathering a layer's parameters only to run it.

Every rank must then take part in every forward pass, evaluation included, and in every save: the whole
state is gathered from the shards, and rank 0 gets it. Loading puts each rank's shard back from the
whole state, so an FSDP checkpoint is the same whole state a DDP or single-process run saves.
"""

from typing import Any

import torch
from torch import nn

from training.workloads.strategies.base import Strategy


class FSDP(Strategy):
    name = "fsdp"
    label = "FSDP"
    torchrun = True
    collective_forward = True

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """Each module that owns parameters becomes a unit of its own, then the root takes whatever is left;
        the model is sharded in place."""
        from torch.distributed.fsdp import fully_shard

        for module in list(model.modules())[1:]:
            if any(True for _ in module.parameters(recurse=False)):
                fully_shard(module)
        fully_shard(model)
        return model

    def model_state(self, model: nn.Module) -> dict:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def state_dicts(self, model: nn.Module, optimizer) -> tuple[dict, dict]:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

        return get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def load_state_dicts(self, state: dict[str, Any], model: nn.Module, optimizer) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

        set_state_dict(
            model,
            optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optimizer"],
            options=StateDictOptions(full_state_dict=True),
        )
