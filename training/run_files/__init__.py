"""The files a run leaves on the fleet's storage, and how long they are kept.

Its checkpoint directory (``checkpoint_dirs``), the artifacts its workload writes for download
(``artifacts``), and one retention for both and for its profiler files (``retention``,
RUN_FILES_RETENTION_DAYS). Reading a checkpoint is the training process's job (training/workloads/),
continuing from one a launch's (training/launching/resume_run.py).
"""
