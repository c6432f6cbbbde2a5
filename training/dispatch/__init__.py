"""Handing a run to its node workers, and noticing when that fails.

``send`` puts each share of a run on its node's queue; ``reconcile`` sends a lost message again or fails
a run no worker takes; ``lost`` ends a run whose worker stopped sending heartbeats; ``waiting`` says,
for the run page and the API, what a run that has not started waits for. The node worker's side of the
heartbeat is training/node/worker_presence.py.
"""
