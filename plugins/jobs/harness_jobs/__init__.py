"""harness-jobs: background jobs behind the ``jobs_start`` seam, and the job_* tools.

The manager lives in ``harness_jobs.manager`` (``JobManager``, ``JobSnapshot``, ``JobError``); it is
imported when the plugin is configured, so loading the entry point stays quick.
"""

from .plugin import JobsPlugin

__all__ = ["JobsPlugin"]
