"""The kubelet's part, played here: one copy of Kubernetes' `$(VAR)` expansion and of how the kubelet
builds a container's environment and argv, for the unit tests (a rendered container, no apiserver)
and the integration and contract tests (a Pod read back from the apiserver, on kwok's fake nodes,
which run no container).

kwok moves pods through their phases, but no process ever starts, so nothing a job would write or
see exists. For tests that need what the container would see (its argv and environment), this
module reads the Pod as the apiserver holds it and does what the kubelet does before it starts the
container: it resolves the env (literal values, secretKeyRef from the real Secret, configMapKeyRef,
fieldRef to the pod's metadata and spec) in order, expands `$(VAR)` references as the kubelet does
(an exact port of k8s.io/kubernetes/third_party/forked/golang/expansion), and expands command and
args the same way. `run_container` then runs that command with that env here: the image is ignored,
so the command must exist on this machine (the contract suite's dump job runs sys.executable).

Without a Pod (unit tests), `env_of(container, sources)` resolves valueFrom entries by variable name
from `sources` and `argv_of(container, env)` expands command and args: the same code path.
"""
from __future__ import annotations

import base64
import os
import subprocess
from typing import Any, Callable, Mapping

OPERATOR, OPENER, CLOSER = ord("$"), ord("("), ord(")")

# valueFrom resolution: (variable name, its valueFrom mapping) -> the value
ValueFrom = Callable[[str, Mapping[str, Any]], str]
# a Secret or ConfigMap of the pod's namespace: (kind, name) -> the object
Read = Callable[[str, str], Mapping[str, Any]]


# ---- expansion (exact port) ------------------------------------------------------------------------------------

def _try_read_variable_name(data: bytes) -> tuple[bytes, bool, int]:
    """tryReadVariableName: (bytes read, is a variable name, bytes consumed after the `$`)."""
    first = data[0]
    if first == OPERATOR:  # `$$`: an escaped operator
        return data[0:1], False, 1
    if first == OPENER:
        for i in range(1, len(data)):
            if data[i] == CLOSER:
                return data[1:i], True, i + 1
        return b"$(", False, 1  # incomplete reference: returned as is
    # not an expression: the operator and the first *byte*, which Go's string(byte) turns into the
    # rune U+00XX (so `$` before a multi-byte character mangles it, as the kubelet does)
    return b"$" + chr(first).encode("utf-8"), False, 1


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """expansion.Expand: `$(NAME)` → mapping(NAME); `$$` → `$`; anything else stays."""
    data = text.encode("utf-8")
    buf = bytearray()
    checkpoint = 0
    cursor = 0
    while cursor < len(data):
        if data[cursor] == OPERATOR and cursor + 1 < len(data):
            buf += data[checkpoint:cursor]
            read, is_var, advance = _try_read_variable_name(data[cursor + 1:])
            buf += mapping(read.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape") \
                if is_var else read
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return (bytes(buf) + data[checkpoint:]).decode("utf-8", "replace")


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """expansion.MappingFuncFor: the first context that defines the name, else `$(NAME)` unchanged."""
    def lookup(name: str) -> str:
        for ctx in contexts:
            if name in ctx:
                return ctx[name]
        return f"$({name})"
    return lookup


# ---- env and argv of one container -----------------------------------------------------------------------------

def resolve_env(spec: Mapping[str, Any], value_from: ValueFrom, read: Read | None = None) -> dict[str, str]:
    """makeEnvironmentVariables for one container spec: envFrom first (needs `read`), then env in order,
    each literal value expanded against what is defined so far, each valueFrom entry by `value_from`.
    Service link variables are left out."""
    env: dict[str, str] = {}
    for source in spec.get("envFrom") or ():
        if read is None:
            raise ValueError("envFrom needs a reader of Secrets and ConfigMaps")
        prefix = source.get("prefix", "")
        if "secretRef" in source:
            data = {k: base64.b64decode(v).decode("utf-8") for k, v in
                    (read("Secret", source["secretRef"]["name"]).get("data") or {}).items()}
        else:
            data = dict(read("ConfigMap", source["configMapRef"]["name"]).get("data") or {})
        env.update({prefix + k: v for k, v in data.items()})
    for var in spec.get("env") or ():
        name = var["name"]
        if "valueFrom" in var:
            env[name] = value_from(name, var["valueFrom"])
        else:
            env[name] = expand(var.get("value", ""), mapping_for(env))
    return env


def argv_of(spec: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """command + args of one container spec, `$(VAR)` expanded against its env."""
    lookup = mapping_for(env)
    return [expand(a, lookup) for a in [*(spec.get("command") or ()), *(spec.get("args") or ())]]


def env_of(spec: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, str]:
    """A rendered container's env without a Pod or an apiserver: each valueFrom entry is
    `sources[name]`, or `<NAME>` when not given."""
    return resolve_env(spec, lambda name, _src: sources.get(name, "<" + name + ">"))


# ---- a Pod as the apiserver holds it ---------------------------------------------------------------------------

def _field(pod: Mapping[str, Any], path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    for prefix, source in (("metadata.labels", meta.get("labels") or {}),
                           ("metadata.annotations", meta.get("annotations") or {})):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str(source.get(path[len(prefix) + 2:-2], ""))
    simple = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.podIP": status.get("podIP"),
              "status.hostIP": status.get("hostIP")}
    if path not in simple:
        raise ValueError(f"fieldRef {path} is not supported by this emulation")
    return str(simple[path] or "")


def container_env(pod: Mapping[str, Any], read: Read, container: int = 0) -> dict[str, str]:
    """The environment the kubelet gives the pod's container: secretKeyRef and configMapKeyRef through
    `read(kind, name)` (a Secret or ConfigMap of the pod's namespace), fieldRef from the pod,
    resourceFieldRef from the container's resources."""
    spec = pod["spec"]["containers"][container]

    def value_from(name: str, src: Mapping[str, Any]) -> str:
        if "secretKeyRef" in src:
            ref = src["secretKeyRef"]
            data = read("Secret", ref["name"]).get("data") or {}
            return base64.b64decode(data[ref["key"]]).decode("utf-8")
        if "configMapKeyRef" in src:
            ref = src["configMapKeyRef"]
            return str((read("ConfigMap", ref["name"]).get("data") or {})[ref["key"]])
        if "fieldRef" in src:
            return _field(pod, src["fieldRef"]["fieldPath"])
        if "resourceFieldRef" in src:
            ref = src["resourceFieldRef"]
            res = spec.get("resources") or {}
            kind, _, what = ref["resource"].partition(".")
            return str((res.get(kind) or {}).get(what, "0"))
        raise ValueError(f"env {name}: valueFrom {sorted(src)} is not supported by this emulation")

    return resolve_env(spec, value_from, read)


def container_argv(pod: Mapping[str, Any], env: Mapping[str, str], container: int = 0) -> list[str]:
    """command + args with `$(VAR)` expanded against the container's env (the image's entrypoint,
    when command is not given, is unknown here: an error)."""
    spec = pod["spec"]["containers"][container]
    if not spec.get("command"):
        raise ValueError(f"pod {pod['metadata']['name']}: no command (the image's entrypoint is not known here)")
    return argv_of(spec, env)


def run_container(pod: Mapping[str, Any], read: Read, cwd: str, timeout: float = 60,
                  container: int = 0) -> subprocess.CompletedProcess:
    """Run the pod's container command here (image ignored), with the environment the kubelet would
    give it plus PATH and HOME of this machine, in `cwd` (the container's workingDir is not made)."""
    env = container_env(pod, read, container)
    argv = container_argv(pod, env, container)
    host = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(argv, env={**host, **env}, cwd=cwd, capture_output=True, text=True, timeout=timeout)
