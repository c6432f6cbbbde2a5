"""Profiling a run, from the launch's options to the run page's tables.

``options`` checks a launch's profiler options and turns them into flags; ``files`` names where a
profiled process writes (pure Python: the workloads and ``cprofile_run``, which runs a user script under
cProfile, import it); ``results`` is the node worker bringing each rank's results into the database;
``tables`` and ``downloads`` show and serve them. The torch profiler over a workload's steps is torch
code and sits with the training loop (training/workloads/profiling.py).
"""
