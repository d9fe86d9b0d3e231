"""The detached supervisor of one local run: hooks, the command, restarts, and the recorded outcome.

Started by the local client in its own session; survives jsctl exiting. Everything it knows it
writes to status.json in the run directory, which is how `jsctl status` learns the outcome.
Secrets arrive in its environment, never on disk.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.providers.local import runs
from jsctl.render.launch import expand

GRACE_S = 10.0
MAX_REQUEUES = 100


class Supervisor:
    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.request: dict[str, Any] = runs.read_json(os.path.join(directory, runs.REQUEST)) or {}
        self.status: dict[str, Any] = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        self.child: subprocess.Popen | None = None
        self.cancelled = False
        self.log = open(os.path.join(directory, runs.LOG), "ab", buffering=0)

    def note(self, text: str) -> None:
        self.log.write(f"[jsctl {time.strftime('%H:%M:%S')}] {text}\n".encode())

    def save(self, **fields: Any) -> None:
        self.status.update(fields, supervisor_pid=os.getpid(), updated_at=time.time())
        runs.write_json(os.path.join(self.dir, runs.STATUS), self.status)

    def on_signal(self, signum: int, _frame: Any) -> None:
        self.cancelled = True
        if self.child and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("JSCTL_SUPERVISOR", None)
        bindir = os.path.dirname(sys.executable)  # the job finds torchrun and python of this install first
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        job_env = dict(self.request.get("env") or {})
        env.update(job_env)
        workers = self.status.get("workers")
        if workers:  # `jsctl scale` changed the shape: the launcher's --nproc_per_node follows
            env["JETSTREAM_GPUS_PER_NODE"] = env["JETSTREAM_WORLD_SIZE"] = str(workers)
        strategy = self.status.get("strategy")
        if strategy:  # `jsctl tune` switched the strategy: jsruntime applies what JETSTREAM_STRATEGY says
            env["JETSTREAM_STRATEGY"] = json.dumps(strategy, sort_keys=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            env["MASTER_PORT"] = str(s.getsockname()[1])
        # `${NAME}` in the job's values names one of the job's variables (PET_RDZV_ENDPOINT names
        # MASTER_ADDR and MASTER_PORT; JETSTREAM_DEEPSPEED_CONFIG names the run directory's marker): it
        # expands now, as a Slurm script's exports do
        name, value = runs.run_marker(self.dir)
        names = {k: env[k] for k in (*job_env, "MASTER_ADDR", "MASTER_PORT") if k in env} | {name: value}
        env.update({k: expand(env[k], names) for k in job_env})
        env[name] = value  # the marker is the run's own, whatever the job's variables say
        env["JETSTREAM_RESTART_COUNT"] = str(self.status.get("restarts", 0))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(self, argv: list[str], env: dict[str, str], what: str) -> int:
        argv = [expand(a, env) for a in argv]
        self.note(f"{what}: {' '.join(argv)}")
        try:
            self.child = subprocess.Popen(argv, cwd=self.request.get("workdir") or None, env=env,
                                          stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                          start_new_session=True)
        except FileNotFoundError:
            self.note(f"{what} failed: command not found: {argv[0]}")
            self.reason = f"{what}: command not found: {argv[0]}"
            return 127
        except PermissionError:
            self.note(f"{what} failed: permission denied: {argv[0]}")
            self.reason = f"{what}: permission denied: {argv[0]}"
            return 126
        self.save(child_pgid=self.child.pid)
        deadline = self.started + self.request["time_limit_s"] if self.request.get("time_limit_s") else None
        while True:
            try:
                code = self.child.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if os.path.exists(os.path.join(self.dir, runs.CANCEL)) and not self.cancelled:
                    self.on_signal(signal.SIGTERM, None)
                if deadline and time.time() > deadline and not self.cancelled:
                    self.note("time_limit reached: stopping the job")
                    self.timed_out = True
                    self.on_signal(signal.SIGTERM, None)
                if self.cancelled and time.time() > self.stop_deadline():
                    try:
                        os.killpg(self.child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    runs.kill_all(self.dir, signal.SIGKILL)
        self.reason = f"{what} exited with code {code}" if code else None
        if code < 0:
            self.reason = f"{what} was killed by signal {signal.Signals(-code).name}"
        self.note(f"{what} exited with code {code}")
        return code

    def stop_deadline(self) -> float:
        if not hasattr(self, "_stop_at"):
            self._stop_at = time.time() + GRACE_S
        return self._stop_at

    def last_checkpoint_step(self) -> int | None:
        """The step of the newest checkpoint the runtime reported in the log."""
        step = None
        try:
            with open(os.path.join(self.dir, runs.LOG), "rb") as fh:
                for raw in fh:
                    if raw.startswith(b'{"jetstream": "checkpoint"'):
                        try:
                            step = int(json.loads(raw)["step"])
                        except (ValueError, KeyError, TypeError):
                            continue
        except OSError:
            return None
        return step

    def paused(self) -> bool:
        """`jsctl pause`: the job checkpointed and exited; its workers are gone. Wait, PAUSED and holding
        no workers, until the pause marker is removed (resume: True) or the run is cancelled (False)."""
        step = self.last_checkpoint_step()
        self.note(f"paused at checkpoint step {step}: workers stopped until jsctl resume")
        self.save(phase="PAUSED", engine_state=f"paused at step {step}", paused_step=step, released=True,
                  child_pgid=None)
        since = time.time()
        while os.path.exists(os.path.join(self.dir, runs.PAUSE)):
            if self.cancelled or os.path.exists(os.path.join(self.dir, runs.CANCEL)):
                self.cancelled = True
                return False
            time.sleep(0.2)
        self.started += time.time() - since  # time_limit counts running time, not time paused
        self.note(f"resumed: restarting from the checkpoint at step {step}")
        self.save(phase="RUNNING", engine_state="resuming", released=False)
        return True

    def hooks(self, name: str, env: dict[str, str]) -> int:
        for i, argv in enumerate(self.request.get(name) or []):
            code = self.run(argv, env, f"{name}[{i}]")
            if code:
                return code
        return 0

    def main(self) -> int:
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        self.started = time.time()
        self.timed_out = False
        self.reason: str | None = None
        self.save(phase="RUNNING", engine_state="starting", started_at=self.status.get("started_at") or self.started,
                  restarts=self.status.get("restarts", 0), requeues=self.status.get("requeues", 0))
        for path in self.request.get("outputs") or []:
            os.makedirs(path, exist_ok=True)
        restarts, requeues = self.status.get("restarts", 0), self.status.get("requeues", 0)
        code = 0
        env = self.environment()
        self.save(engine_state="pre_run")
        code = self.hooks("pre_run", env)
        attempt = code == 0
        while attempt and not self.cancelled:
            self.save(engine_state="running", master_port=env["MASTER_PORT"])
            code = self.run(self.request["argv"], env, "command")
            if code == 0 or self.cancelled or self.timed_out:
                break
            codes = self.request.get("restart_on_exit_codes") or []
            if code == REQUEUE_EXIT_CODE and os.path.exists(os.path.join(self.dir, runs.PAUSE)):
                if not self.paused():  # cancelled while paused
                    break
            elif code == REQUEUE_EXIT_CODE and requeues < MAX_REQUEUES:
                requeues += 1
                scaled = runs.read_json(os.path.join(self.dir, runs.SCALE))
                tuned = runs.read_json(os.path.join(self.dir, runs.STRATEGY))
                if tuned:
                    os.unlink(os.path.join(self.dir, runs.STRATEGY))
                    self.note(f"strategy switched to {json.dumps(tuned['strategy'], sort_keys=True)}: resuming "
                              "from the latest checkpoint")
                    self.save(strategy=tuned["strategy"])
                if tuned and not scaled:
                    self.save(requeues=requeues, engine_state="retuning")
                elif scaled:
                    os.unlink(os.path.join(self.dir, runs.SCALE))
                    self.note(f"scaled to {scaled['workers']} workers: resuming from the latest checkpoint")
                    self.save(requeues=requeues, engine_state="rescaling", workers=int(scaled["workers"]))
                else:
                    self.note(f"preempted (exit {code}): requeue {requeues}, resuming from the latest checkpoint")
                    self.save(requeues=requeues, engine_state="requeued")
            elif restarts < self.request.get("max_restarts", 0) and (not codes or code in codes):
                restarts += 1
                self.note(f"restart {restarts} of {self.request.get('max_restarts')} after exit code {code}")
                self.save(restarts=restarts, engine_state="restarting", last_failure=self.reason)
            else:
                break
            env = self.environment()
        runs.kill_all(self.dir, signal.SIGKILL)  # stragglers in sessions of their own
        if self.cancelled and not self.timed_out:
            self.save(phase="CANCELLED", engine_state="cancelled", reason="stopped by jsctl stop",
                      ended_at=time.time(), exit_code=code)
            return 0
        if code == 0:
            self.save(engine_state="post_success")
            hook = self.hooks("post_success", env)
            if hook:
                self.save(phase="FAILED", engine_state="post_success failed", reason=self.reason,
                          exit_code=hook, ended_at=time.time())
                return 0
            self.save(phase="SUCCEEDED", engine_state="completed", reason=None, exit_code=0, ended_at=time.time())
            return 0
        reason = "time_limit reached" if self.timed_out else self.reason
        self.save(engine_state="post_failure")
        self.hooks("post_failure", env)
        self.save(phase="FAILED", engine_state="timeout" if self.timed_out else "failed", reason=reason,
                  exit_code=code, ended_at=time.time())
        return 0


def main() -> int:
    directory = sys.argv[1]
    try:
        return Supervisor(directory).main()
    except Exception as exc:  # record, never vanish silently
        runs.write_json(os.path.join(directory, runs.STATUS),
                        {**(runs.read_json(os.path.join(directory, runs.STATUS)) or {}), "phase": "FAILED",
                         "engine_state": "supervisor error", "reason": f"supervisor error: {exc}",
                         "ended_at": time.time()})
        raise


if __name__ == "__main__":
    sys.exit(main())
