"""moto_server with two per-job knobs for AWS Batch's simple mode (run: `python motobatch.py PORT`).

moto's simple mode (no Docker) runs nothing: SubmitJob marks a job SUCCEEDED at once (FAILED with
MOTO_SIMPLE_BATCH_FAIL_AFTER in the server's environment, for every job). Two tags of a submitted job
change that, for that job only, the way kwok's `kwok-run: long` label keeps a pod running:

- `moto-run: long`: the job is left RUNNING (an attempt started) until TerminateJob stops it (FAILED
  with the given reason, as AWS Batch does for a running job);
- `moto-exit: N`: the job FAILS at once with exit code N and AWS's "Essential container in task
  exited" reason on its attempt.

Everything else is moto as released. A jsctl job gets such a tag from its labels (labels that are
valid AWS tags are copied to the job's tags).
"""
from __future__ import annotations

import datetime
import sys

from moto.batch.models import Job
from moto.batch_simple.models import BatchSimpleBackend
from moto.batch.utils import JobStatus

_finish = BatchSimpleBackend._mark_job_as_finished
_terminate = Job.terminate


def _mark_job_as_finished(self, include_start_attempt: bool, job: Job) -> None:
    tags = self.backend.list_tags_for_resource(job.arn)
    if tags.get("moto-run") == "long" and include_start_attempt:
        self.backend._jobs[job.job_id] = job
        job.job_started_at = datetime.datetime.now()
        job.log_stream_name = job._stream_name
        job._start_attempt()
        job.status = JobStatus.RUNNING.value
        return
    if tags.get("moto-exit") and include_start_attempt:
        self.backend._jobs[job.job_id] = job
        job.job_started_at = datetime.datetime.now()
        job.log_stream_name = job._stream_name
        job._start_attempt()
        job.exit_code = int(tags["moto-exit"])
        job.latest_attempt["container"].update(exitCode=job.exit_code, reason="Essential container in task exited")
        job.job_stopped_reason = "Essential container in task exited"
        job._mark_stopped(success=False)
        return
    _finish(self, include_start_attempt, job)


def terminate(self: Job, reason: str) -> None:
    _terminate(self, reason)
    if not self.is_alive() and not self.job_stopped:  # simple mode: no thread will ever stop it
        self._mark_stopped(success=False)


BatchSimpleBackend._mark_job_as_finished = _mark_job_as_finished
Job.terminate = terminate

if __name__ == "__main__":
    from moto.server import main

    main(["-H", "127.0.0.1", "-p", sys.argv[1]])
