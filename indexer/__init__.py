"""The Celery shell: the job stages as thin tasks on three queues (cpu, gpu, write).

Nothing here holds pipeline logic: tasks rebuild a :class:`mmrag.jobs.model.Work` from their
ids and call the shared stage code in :mod:`mmrag.jobs`.
"""
