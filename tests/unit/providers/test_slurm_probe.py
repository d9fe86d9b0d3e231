"""The Slurm client's decisions, with a stand-in for the commands (no cluster): probe, refresh with
its fallbacks, submit's command line, adopt, cancel, pause/resume routing."""
from __future__ import annotations

import json

import pytest

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.providers.slurm.request import SbatchRequest
from jsctl.model.cluster import Cluster
from jsctl.model.status import JobHandle
from jsctl.providers.slurm.client import SlurmClient
from jsctl.providers.slurm.runner import Result

PARTS = "PartitionName=debug Default=YES MaxTime=1:00:00 Nodes=n1 State=UP TotalNodes=1\n"


class FakeRunner:
    """Answers by the command's first words; records every call."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, argv, input=None, secrets=None, timeout_s=None):
        self.calls.append((tuple(argv), input, dict(secrets or {})))
        for prefix, answer in self.answers.items():
            if tuple(argv[:len(prefix)]) == prefix:
                rc, out, err = answer(argv) if callable(answer) else answer
                return Result(tuple(argv), rc, out, err)
        return Result(tuple(argv), 0, "", "")

    def check(self, argv, **kw):
        res = self.run(argv, **kw)
        if not res.ok:
            raise ProviderError(f"{argv[0]} failed: {res.error()}")
        return res


def client(answers):
    return SlurmClient(Cluster("ci", "slurm", {"shared_dir": "/shared"}), "/ws", runner=FakeRunner(answers))


def squeue(*jobs):
    return (0, json.dumps({"jobs": list(jobs)}), "")


def job(i, state="RUNNING", **kw):
    return {"job_id": i, "name": kw.pop("name", "js-a-0000"), "job_state": state, "state_reason": "None",
            "exit_code": 0, "restart_cnt": 0, "nodes": "n1", "start_time": 1, "end_time": 2,
            "comment": kw.pop("comment", ""), **kw}


def test_probe():
    sinfo = {"meta": {"Slurm": {"release": "22.05.8"}}, "nodes": [
        {"name": "n1", "state": "idle", "cpus": 8, "real_memory": 1024, "gres": "gpu:2", "partitions": ["debug"]}]}
    c = client({("sinfo", "--json"): (0, json.dumps(sinfo), ""), ("scontrol",): (0, PARTS, "")})
    f = c.probe()
    assert f.data["version"] == "22.05.8" and f.data["partitions"]["debug"]["max_time_s"] == 3600
    assert f.data["cluster_settings"] == {"shared_dir": "/shared"}


def test_probe_controller_down_fails_fast():
    down = {"meta": {}, "errors": [{"error": "Unspecified error", "errno": -1}], "nodes": []}
    c = client({("sinfo", "--json"): (0, json.dumps(down), "")})
    with pytest.raises(ProviderError, match="sinfo failed: Unspecified error"):
        c.probe()
    assert len(c.runner.calls) == 1


def test_probe_without_json_support():
    c = client({("sinfo", "--json"): (1, "", "sinfo: unrecognized option '--json'"),
                ("sinfo", "-h"): (0, "n1|debug*|idle|8|1024|gpu:2\n", ""), ("scontrol",): (0, PARTS, "")})
    assert c.probe().data["nodes"]["n1"]["cpus"] == 8


def test_refresh_batches_and_falls_back():
    sacct_calls = []

    def sacct(argv):
        sacct_calls.append(argv)
        if "-c" not in argv:
            return 1, "", "Slurm accounting storage is disabled"
        return 0, "8|COMPLETED|0:0|2026-01-01T00:00:00|2026-01-01T00:01:00|n1\n", ""
    c = client({("squeue",): squeue(job(7)), ("sacct",): sacct})
    h7, h8, h9 = (JobHandle("slurm", "ci", str(i)) for i in (7, 8, 9))
    out = c.refresh([h7, h8, h9])
    assert [c_[0][0] for c_ in c.runner.calls].count("squeue") == 1  # one query for all
    assert (out[h7].phase, out[h8].phase, out[h9].phase) == ("RUNNING", "SUCCEEDED", "UNKNOWN")
    assert "-j" in sacct_calls[0] and sacct_calls[0][sacct_calls[0].index("-j") + 1] == "8,9"


def art(secrets=("TOKEN",), comment="jsctl:job.a@1:abc"):
    request = SbatchRequest(("sbatch", "--parsable", "--export=ALL"), "js-a-0000.sbatch", {"comment": comment},
                            "/shared/logs", None, "local", "none")
    return RenderedArtifact("sbatch-script", "js-a-0000", (("js-a-0000.sbatch", "#!/bin/bash\ntrue\n"),),
                            request, "s", secrets=tuple(secrets))


def test_submit_command_line():
    c = client({("squeue",): squeue(job(5, "RUNNING"), job(6, "COMPLETED")), ("sbatch",): (0, "42;ci\n", "")})
    up = {"job.x": JobHandle("slurm", "ci", "5"), "job.y": JobHandle("slurm", "ci", "6")}
    h = c.submit(art(), {"TOKEN": "v", "OTHER": "w"}, up)
    assert h == JobHandle("slurm", "ci", "42")
    argv, script, secrets = c.runner.calls[-1]
    assert argv == ("sbatch", "--parsable", "--export=ALL", "--dependency=afterok:5", "--kill-on-invalid-dep=yes")
    assert script == "#!/bin/bash\ntrue\n" and secrets == {"TOKEN": "v"}  # only this job's secrets
    assert ("mkdir", "-p", "--", "/shared/logs") in [call[0] for call in c.runner.calls]
    with pytest.raises(ProviderError, match="not given to submit: TOKEN"):
        c.submit(art(), {}, {})


def test_submit_refused():
    c = client({("sbatch",): (1, "", "sbatch: error: Batch job submission failed: Invalid partition name")})
    with pytest.raises(ProviderError, match="Invalid partition name"):
        c.submit(art(()), {}, {})


def test_adopt_matches_name_and_comment_and_skips_dead_jobs():
    c = client({("squeue",): squeue(job(3, "CANCELLED", comment="jsctl:job.a@1:abc"),
                                    job(4, "PENDING", comment="jsctl:job.a@1:abc"),
                                    job(5, "RUNNING", comment="jsctl:job.a@1:other"),
                                    job(6, "RUNNING", name="js-b-0000", comment="jsctl:job.a@1:abc"))})
    assert c.adopt(art()) == JobHandle("slurm", "ci", "4")


def other(name, comment):
    a = art((), comment)
    return RenderedArtifact(a.kind, name, a.files, a.request, a.summary)


def test_adopt_asks_squeue_once_per_apply_and_never_misses_its_own_submits():
    c = client({("squeue",): squeue(job(4, "PENDING", comment="jsctl:job.a@1:abc"),
                                    job(7, "RUNNING", name="js-c-0000", comment="jsctl:job.c@1:ccc")),
                ("sbatch",): (0, "42;ci\n", "")})
    assert c.adopt(art()) == JobHandle("slurm", "ci", "4")  # submitted by an apply killed before it recorded
    assert c.adopt(other("js-b-0000", "jsctl:job.b@1:bbb")) is None
    b = c.submit(other("js-b-0000", "jsctl:job.b@1:bbb"), {}, {})
    assert c.adopt(other("js-b-0000", "jsctl:job.b@1:bbb")) == b  # not in the queue as first seen: remembered
    assert c.adopt(other("js-b-0000", "jsctl:job.b@1:other")) is None  # another script: not that job
    assert c.adopt(other("js-c-0000", "jsctl:job.c@1:ccc")) == JobHandle("slurm", "ci", "7")
    assert [call[0][0] for call in c.runner.calls].count("squeue") == 1
    c.cancel(b)
    c.cancel(JobHandle("slurm", "ci", "7"))
    assert c.adopt(other("js-b-0000", "jsctl:job.b@1:bbb")) is None  # cancelled here: not adopted
    assert c.adopt(other("js-c-0000", "jsctl:job.c@1:ccc")) is None
    assert [call[0][0] for call in c.runner.calls].count("squeue") == 1


def test_cancel_is_idempotent():
    c = client({("scancel",): (1, "", "scancel: error: Kill job error on job id 5: Job/step already completing "
                                      "or completed")})
    c.cancel(JobHandle("slurm", "ci", "5"))
    c = client({("scancel",): (1, "", "scancel: error: Access/permission denied")})
    with pytest.raises(ProviderError, match="permission denied"):
        c.cancel(JobHandle("slurm", "ci", "5"))


@pytest.mark.parametrize("state, reason, restarts, verb, expect", [
    ("PENDING", "Resources", 0, "pause", ("uhold", "1")),
    ("SUSPENDED", "None", 0, "resume", ("resume", "1")),
    ("PENDING", "JobHeldUser", 0, "resume", ("release", "1")),
    ("PENDING", "BeginTime", 1, "resume", ("update", "JobId=1", "StartTime=now+2")),
])
def test_pause_resume_routes(state, reason, restarts, verb, expect):
    c = client({("squeue",): squeue(job(1, state, state_reason=reason, restart_cnt=restarts))})
    getattr(c, verb)(JobHandle("slurm", "ci", "1"))
    assert [call[0] for call in c.runner.calls if call[0][0] == "scontrol"][0] == ("scontrol", *expect)


CKPT_SCRIPT = "#!/bin/bash\nexport JETSTREAM_CHECKPOINT_DIR=/ck\nsrun ...\n"


def exit_line(step):
    return ('0: {"jetstream": "event", "event": "exit", "step": %d, "exit_code": 75, "reason": "preempted"}' % step)


def running(script=CKPT_SCRIPT, checkpoints_on_signal=True):
    """A running job whose runtime (when `checkpoints_on_signal`) logs its preemption exit on SIGUSR1, and
    that Slurm requeues held on `scontrol requeuehold`."""
    live = {"job": job(1, "RUNNING", standard_output="/logs/a-1.log"), "log": [exit_line(5)]}

    def signal(argv):
        if checkpoints_on_signal:
            live["log"].append(exit_line(42))
        return (0, "", "")

    def requeuehold(argv):
        live["job"] = job(1, "PENDING", state_reason="JobHeldUser", restart_cnt=1, nodes="",
                          standard_output="/logs/a-1.log")
        return (0, "", "")

    return client({("squeue",): lambda argv: squeue(live["job"]), ("scontrol", "write"): (0, script, ""),
                   ("scancel", "--batch"): signal, ("scontrol", "requeuehold"): requeuehold,
                   ("grep",): lambda argv: (0, "\n".join(live["log"]) + "\n", "")})


def test_pause_checkpoints_then_requeues_the_job_held():
    c = running()
    h = JobHandle("slurm", "ci", "1")
    done = c.pause(h, timeout_s=5)
    assert done.step == 42  # the new preemption exit, not the earlier one
    assert "held, in the queue (GPUs held: none)" in done.how and "SIGSTOP" not in done.how
    argvs = [call[0] for call in c.runner.calls]
    assert ("scancel", "--batch", "--signal=USR1", "1") in argvs and ("scontrol", "requeuehold", "1") in argvs
    live = c.refresh([h])[h]
    assert (live.phase, live.step, live.started_at, live.nodes) == ("PAUSED", 42, None, ())
    assert "PAUSED at checkpoint step 42" in live.reason and "GPUs held: none" in live.reason
    assert c.pause(h).step == 42  # already paused


def test_pause_refuses_a_job_without_checkpoints_and_keeps_one_that_does_not_checkpoint_in_time():
    c = running(script="#!/bin/bash\nsleep 100\n")
    with pytest.raises(ProviderError, match="writes no checkpoints") as exc:
        c.pause(JobHandle("slurm", "ci", "1"))
    assert "--force" in exc.value.hint and not any(call[0][0] == "scancel" for call in c.runner.calls)
    c = running(checkpoints_on_signal=False)
    with pytest.raises(ProviderError, match="did not complete a checkpoint within 0.2s: not paused, it keeps running"):
        c.pause(JobHandle("slurm", "ci", "1"), timeout_s=0.2)
    assert not any(call[0][:2] == ("scontrol", "requeuehold") for call in c.runner.calls)


def test_scale_updates_the_held_job_then_releases_it():
    held = job(1, "PENDING", state_reason="JobHeldUser", restart_cnt=1, node_count=2)
    script = CKPT_SCRIPT + 'export SLURM_GPUS_PER_NODE="${SLURM_GPUS_ON_NODE:-2}"\n'
    c = client({("squeue",): squeue(held), ("scontrol", "write"): (0, "#!/bin/bash\n", "")})
    with pytest.raises(ProviderError, match="does not read its shape from the allocation"):
        c.scale(JobHandle("slurm", "ci", "1"), 2, shape={"nodes": 1, "gpus_per_node": 2})
    c = client({("squeue",): squeue(held), ("scontrol", "write"): (0, script, "")})
    c.scale(JobHandle("slurm", "ci", "1"), 2, shape={"nodes": 1, "gpus_per_node": 2, "memory_per_node": 2 * 2**30})
    scontrol = [call[0] for call in c.runner.calls if call[0][:2] in (("scontrol", "update"), ("scontrol", "release"))]
    assert scontrol[0] == ("scontrol", "update", "JobId=1", "NumNodes=1-1", "NumTasks=1", "NumCPUs=1",
                           "TresPerNode=gres:gpu:2", "MinMemoryNode=2048")
    assert scontrol[1] == ("scontrol", "release", "1")
    with pytest.raises(ProviderError, match="do not spread evenly"):
        c.scale(JobHandle("slurm", "ci", "1"), 3, shape={"nodes": 2})


def test_resume_of_a_finished_job():
    c = client({("squeue",): squeue(job(1, "COMPLETED"))})
    with pytest.raises(ProviderError, match="nothing to resume"):
        c.resume(JobHandle("slurm", "ci", "1"))
