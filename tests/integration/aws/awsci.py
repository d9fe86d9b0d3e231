"""moto_server for the aws-batch tests, started by the tests on 127.0.0.1 (one per test session,
on a free port), with what Batch needs: simple mode (POST /moto-api/config), a VPC, subnet, security
group, IAM role and instance profile, a managed compute environment and the inventory's two job queues.
Requests are recorded (MOTO_ENABLE_RECORDING) to a file the tests read: what moto received."""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
REGION = "us-east-1"
QUEUES = {"on-demand": "jsctl-gpu-od", "spot": "jsctl-gpu-spot"}
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing"}


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    recording: Path

    def boto(self, service: str):
        import boto3

        return boto3.session.Session(region_name=REGION, aws_access_key_id="testing",
                                     aws_secret_access_key="testing").client(service, endpoint_url=self.url)

    def requests(self) -> list[dict]:
        """Every request moto received so far (method, url, headers, body as text)."""
        import base64

        out = []
        for line in self.recording.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            body = entry.get("body") or ""
            if entry.get("body_encoded"):
                body = base64.b64decode(body).decode("utf-8", "replace")
            out.append({**entry, "body": body})
        return out

    def inventory(self, cluster: str = "aws", extra: str = "") -> str:
        return (f"version: jetstream.v1\nclusters:\n  - name: {cluster}\n    provider: aws-batch\n"
                f"    region: {REGION}\n    instance_types: [g5.xlarge, g5.12xlarge, p4de.24xlarge]\n"
                f"    job_queues: {{on-demand: {QUEUES['on-demand']}, spot: {QUEUES['spot']}}}\n"
                f"    endpoint_url: {self.url}\n" + extra)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(env: dict[str, str] | None = None) -> Server:
    """A moto_server (motobatch.py: moto plus per-job knobs) with Batch set up; stopped at exit."""
    for k, v in CREDENTIALS.items():
        os.environ.setdefault(k, v)
    port = free_port()
    recording = Path(tempfile.mkdtemp(prefix="jsctl-moto-")) / "recording.jsonl"
    recording.touch()
    penv = {**os.environ, "MOTO_ENABLE_RECORDING": "True", "MOTO_RECORDER_FILEPATH": str(recording), **(env or {})}
    proc = subprocess.Popen([sys.executable, str(HERE / "motobatch.py"), str(port)], env=penv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(f"http://127.0.0.1:{port}", proc, recording)
    atexit.register(server.stop)
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(server.url + "/moto-api/", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("moto_server did not start")
            time.sleep(0.1)
    req = urllib.request.Request(server.url + "/moto-api/config", data=json.dumps({"batch": {"use_docker": False}})
                                 .encode(), method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()
    setup(server)
    return server


def setup(server: Server) -> None:
    ec2, iam, batch = server.boto("ec2"), server.boto("iam"), server.boto("batch")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName="jsctl-batch", Description="jsctl", VpcId=vpc)["GroupId"]
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                                "Principal": {"Service": "batch.amazonaws.com"}}]})
    role = iam.create_role(RoleName="jsctl-batch", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="jsctl-batch")["InstanceProfile"]["Arn"]
    iam.add_role_to_instance_profile(InstanceProfileName="jsctl-batch", RoleName="jsctl-batch")
    envs = {}
    for capacity, kind in (("on-demand", "EC2"), ("spot", "SPOT")):
        envs[capacity] = batch.create_compute_environment(
            computeEnvironmentName=f"jsctl-gpu-{capacity}", type="MANAGED", state="ENABLED", serviceRole=role,
            computeResources={"type": kind, "minvCpus": 0, "maxvCpus": 1024, "desiredvCpus": 0,
                              "instanceTypes": ["g5.xlarge", "g5.12xlarge", "p4de.24xlarge"],
                              "subnets": [subnet], "securityGroupIds": [sg], "instanceRole": profile,
                              **({"bidPercentage": 100, "spotIamFleetRole": role} if kind == "SPOT" else {})},
        )["computeEnvironmentArn"]
        batch.create_job_queue(jobQueueName=QUEUES[capacity], state="ENABLED", priority=1,
                               computeEnvironmentOrder=[{"order": 1, "computeEnvironment": envs[capacity]}])


_server: Server | None = None


def server() -> Server:
    """The session's server (started on first use)."""
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = start()
    return _server


# ---- what the tests share ---------------------------------------------------------------------

def record(ws: Path, address: str) -> dict:
    return json.loads((ws / ".jsctl" / "state.json").read_text(encoding="utf-8"))["resources"][address]


def job_file(name: str, command: list[str], labels: dict | None = None, env: dict | None = None,
             secrets: tuple[str, ...] = (), gpus: int = 0) -> str:
    text = f"version: jetstream.v1\njob:\n  name: {name}\n"
    if labels:
        text += "  labels:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in labels.items())
    if gpus:
        text += f"compute:\n  resources:\n    gpu: {{type: a10g, count: {gpus}, per_node: 1}}\n  time_limit: 10m\n"
    else:
        text += "compute:\n  resources:\n    cpu: {count: 1}\n    memory: {total: 1Gi}\n  time_limit: 10m\n"
    text += "environment:\n  image: python:3.11-slim\n"
    if env:
        text += "  env_vars:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in env.items())
    if secrets:
        text += "  secrets: [" + ", ".join(secrets) + "]\n"
    return text + "lifecycle:\n  command: [" + ", ".join(json.dumps(a) for a in command) + "]\n"


def run_container(server: Server, job_id: str, cwd: str, timeout: float = 60.0) -> list[subprocess.CompletedProcess]:
    """Play the part of AWS Batch's container agent for a job moto's simple mode ran nothing for: read
    the job and its definition as moto holds them, build each node's environment as AWS Batch does
    (the definition's environment, its `secrets` read from SSM / Secrets Manager, AWS_BATCH_JOB_ID,
    AWS_BATCH_JOB_ATTEMPT, and for a multinode job AWS_BATCH_JOB_NUM_NODES, _NODE_INDEX,
    _MAIN_NODE_INDEX and, on every node but the main one, _MAIN_NODE_PRIVATE_IPV4_ADDRESS), run its
    command here (the image is ignored; nodes one after another), and put what it printed into the
    job's CloudWatch Logs stream, as the awslogs driver would."""
    batch, ssm, sm, logs = (server.boto(s) for s in ("batch", "ssm", "secretsmanager", "logs"))
    (job,) = batch.describe_jobs(jobs=[job_id])["jobs"]
    (definition,) = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]])["jobDefinitions"]
    if definition["type"] == "multinode":
        props = job["nodeProperties"]  # moto's DescribeJobDefinitions leaves nodeProperties out
        nodes = [(i, props["nodeRangeProperties"][0]["container"]) for i in range(props["numNodes"])]
    else:
        nodes = [(None, definition["containerProperties"])]
    results = []
    for index, container in nodes:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
        env.update({e["name"]: e["value"] for e in container.get("environment", ())})
        for s in container.get("secrets", ()):
            ref = s["valueFrom"]
            env[s["name"]] = (sm.get_secret_value(SecretId=ref)["SecretString"] if ":secretsmanager:" in ref else
                              ssm.get_parameter(Name=ref, WithDecryption=True)["Parameter"]["Value"])
        env.update(AWS_BATCH_JOB_ID=job_id, AWS_BATCH_JOB_ATTEMPT="1", AWS_BATCH_JQ_NAME=job["jobQueue"])
        if index is not None:
            env.update(AWS_BATCH_JOB_NUM_NODES=str(len(nodes)), AWS_BATCH_JOB_NODE_INDEX=str(index),
                       AWS_BATCH_JOB_MAIN_NODE_INDEX="0")
            if index != 0:
                env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
        res = subprocess.run(container["command"], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        results.append(res)
        stream = (job.get("attempts") or [{}])[-1].get("container", {}).get("logStreamName") or \
            f"{definition['jobDefinitionName']}/default/{job_id}"
        group = container.get("logConfiguration", {}).get("options", {}).get("awslogs-group", "/aws/batch/job")
        try:
            logs.create_log_group(logGroupName=group)
        except logs.exceptions.ResourceAlreadyExistsException:
            pass
        try:
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
        except logs.exceptions.ResourceAlreadyExistsException:
            pass
        lines = (res.stdout + res.stderr).splitlines()
        if lines:
            now = int(time.time() * 1000)
            logs.put_log_events(logGroupName=group, logStreamName=stream,
                                logEvents=[{"timestamp": now, "message": line} for line in lines])
    return results
