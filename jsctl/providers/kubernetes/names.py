"""Kubernetes names: what is a valid object name, label and environment key, and the names of a
job's objects, all derived from its job id (`js-<name>-<4 chars>`, at most 48 characters)."""
from __future__ import annotations

import re

DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # RFC 1035 label: Services need a leading letter
LABEL_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SECRET_KEY = re.compile(r"[-._A-Za-z0-9]+")
REPLICATED_JOB = "node"  # JobSet's replicated job, Volcano's task, the Kubeflow runtime's node job
CONTAINER = "node"
MAX_INDEX_DIGITS = 4  # pod hostnames end in the index: room for 9999 nodes


def dns_label(name: str) -> bool:
    return len(name) <= 63 and DNS_LABEL.fullmatch(name) is not None


def label_value(value: str) -> bool:
    return len(value) <= 63 and LABEL_NAME.fullmatch(value) is not None


def label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and LABEL_NAME.fullmatch(name) is not None


def secret_name(job_id: str) -> str:
    """The Secret the client creates at submit with the job's secret values."""
    return f"{job_id}-secrets"


def deepspeed_config_map(job_id: str) -> str:
    return f"{job_id}-deepspeed"


def longest_hostname(job_id: str, flavor: str) -> str:
    """The longest pod hostname the flavor makes for this job (it must be a DNS label)."""
    index = "9" * MAX_INDEX_DIGITS
    if flavor == "job":
        return f"{job_id}-{index}"
    if flavor == "volcano":
        return f"{job_id}-{REPLICATED_JOB}-{index}"
    return f"{job_id}-{REPLICATED_JOB}-0-{index}"  # JobSet (kubeflow runs on one)


def master_host(job_id: str, flavor: str, namespace: str) -> str:
    """The DNS name of the pod with index 0, where torchrun's rendezvous store runs."""
    if flavor == "job":  # Indexed Job: hostname <job>-<index>, subdomain = the headless Service
        return f"{job_id}-0.{job_id}.{namespace}.svc"
    if flavor == "volcano":  # the svc plugin: hostname <job>-<task>-<index>, subdomain <job>
        return f"{job_id}-{REPLICATED_JOB}-0.{job_id}.{namespace}.svc"
    return f"{job_id}-{REPLICATED_JOB}-0-0.{job_id}.{namespace}.svc"  # JobSet: <js>-<rjob>-<job>-<pod>.<subdomain>


def env_safe(name: str) -> str:
    """A storage entry's name as part of a volume name (a DNS label)."""
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:50] or "x"
