"""Sweeps: a grid or random search over hyperparameters, run as single-process runs over the fleet.

``search`` expands the space and checks each run like a launch; ``placing`` gives the waiting runs free
GPUs as they come free (after the sweep is stored, then from beat) and cancels a sweep.
"""
