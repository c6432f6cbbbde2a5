"""The demo: one admin, two researchers, two projects and 4 nodes × 8 GPUs of mixed models."""

import json
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from fleet.demo.nodes import DEMO_NODES, GPUS_PER_NODE
from inventory.models import GPU, GPUModel, Node, OsAccount, Project
from inventory.nodes import add_node, rotate_token
from monitoring.agent.simulate import gpu_uuid

# carol owns the simulated fleet's forgotten notebook, so its idle-process alert has an owner to tell.
DEMO_USERS = [("admin", True), ("alice", False), ("bob", False), ("carol", False)]
DEMO_PROJECTS = {"vision": ["alice", "bob"], "language": ["bob", "carol"]}


def demo_password() -> str:
    return secrets.token_urlsafe(9)


@transaction.atomic
def seed_users(logins_file: Path) -> dict[str, str]:
    """Create the demo users once; keep their passwords across demo starts."""
    logins = json.loads(logins_file.read_text()) if logins_file.exists() else {}
    User = get_user_model()
    for username, staff in DEMO_USERS:
        password = logins.setdefault(username, demo_password())
        user, _ = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
        user.is_staff = user.is_superuser = staff
        user.set_password(password)
        user.save()
        OsAccount.objects.get_or_create(username=username, defaults={"user": user})
    for name, members in DEMO_PROJECTS.items():
        project, _ = Project.objects.get_or_create(name=name, defaults={"monthly_budget": 5000})
        project.members.add(*User.objects.filter(username__in=members))
    logins_file.parent.mkdir(parents=True, exist_ok=True)
    logins_file.write_text(json.dumps(logins, indent=2))
    logins_file.chmod(0o600)
    return logins


@transaction.atomic
def seed_nodes(tokens_file: Path) -> dict[str, str]:
    """Create the demo nodes and GPUs; issue fresh agent tokens for the simulated agents."""
    tokens = {}
    for hostname, (model_name, nvml_name, memory_mib, power_w, pcie_gen) in DEMO_NODES.items():
        if Node.objects.filter(hostname=hostname).exists():
            tokens[hostname] = rotate_token(hostname)
        else:
            _, tokens[hostname] = add_node(hostname)
        node = Node.objects.get(hostname=hostname)
        model = GPUModel.objects.get(name=model_name)
        for index in range(GPUS_PER_NODE):
            GPU.objects.get_or_create(
                node=node,
                index=index,
                defaults=dict(
                    uuid=gpu_uuid(hostname, index),
                    model=model,
                    name=nvml_name,
                    memory_total_mib=memory_mib,
                    power_limit_w=power_w,
                    pcie_gen=pcie_gen,
                    pcie_width=16,
                ),
            )
    tokens_file.parent.mkdir(parents=True, exist_ok=True)
    tokens_file.write_text(json.dumps(tokens, indent=2))
    tokens_file.chmod(0o600)
    return tokens
