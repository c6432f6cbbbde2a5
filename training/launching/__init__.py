"""Starting, continuing and stopping runs on the server, whoever asks: the form, the API, sweeps, burn-ins,
an admin's booking preempt, idle reclaim.

``launch`` checks everything before anything starts (``params``, user ``scripts``, a booking to start on
with ``scheduled``), then creates the run and hands it to training/dispatch/; ``resume_run`` launches the
continuation of an ended run from its checkpoint; ``cancel`` is the one polite stop; ``run_cost`` prices a
run, and a launch before it starts.
"""
