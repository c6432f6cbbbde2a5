"""Training's web side: the pages, forms, JSON API and websockets of runs and sweeps.

Each view reads, checks who may (``access``), and calls training/launching/ or training/sweeps/ to act.
The launch form's GPU list is ``gpu_picker``, the run page's GPU use from telemetry ``efficiency``, the
compare page's differences ``env_diff``. The run's JSON shape and its live updates are shared with the
node worker and the dispatcher, so they sit at the app's root (training/serializers.py, broadcast.py).
"""
