"""The node worker's side of a run: what the Celery worker on a GPU node (queue ``node.<hostname>``) does.

It claims its share of a run, builds the command line, starts the processes as the owner's OS account
with the run's environment, streams their output into the database, stops them on cancel, and says at
every heartbeat that it is alive. The processes it starts run the programs of training/workloads/.
"""
