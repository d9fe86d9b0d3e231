"""The Kubernetes provider's effects, through the official `kubernetes` package (imported here only).

- submit: the job's Secret (from the secret values; never on disk), then every document of the
  manifest in order by server-side apply (field manager `jsctl`, force: see `apply_object`).
- refresh: one LIST per namespace and kind (label selector `jsctl.dev/job-id in (...)`), one LIST of
  the pods per namespace when a job has not ended; phases as livestatus.py maps them.
- cancel: delete the workload (propagationPolicy Foreground) and the job's Service, Secret and
  ConfigMaps; an Event (reason CancelledByJsctl) stays behind so that a later refresh says CANCELLED
  (for an hour: the apiserver's event TTL) instead of "gone".
- check: server-side dry run (dryRun=All) of every document.
- pause/resume: spec.suspend of a Job or JobSet (its pods are deleted: SIGTERM, the runtime checkpoints).

Job handles are `kubernetes://<cluster>/<namespace>/<kind>.<version>.<group>/<name>` (handles.py);
logs and events are read per pod (podlogs.py); phases are mapped in livestatus.py.
"""
from __future__ import annotations

import base64
import os
import re
import socket
import time
from typing import Any, Iterator, Mapping


from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster, Facts
from jsctl.model.status import EngineEvent, JobHandle, LiveStatus, PauseResult
from jsctl.providers.base import ProviderClient
from jsctl.providers.kubernetes import livestatus, podlogs
from jsctl.providers.kubernetes.handles import Ref, manifest_documents
from jsctl.providers.kubernetes.kubeapi import APPLY_PATCH, MERGE_PATCH, ApiError, KubeApi, kubeconfig_path
from jsctl.providers.kubernetes.request import FIELD_MANAGER, GENERATION_LABEL, JOB_ID_LABEL, KubernetesRequest

GPU = "nvidia.com/gpu"
SUSPENDABLE = {("Job", "batch"), ("JobSet", "jobset.x-k8s.io")}
# what pause did (PauseResult.how)
SUSPENDED = "the workload is suspended (spec.suspend: true) and its pods are deleted (GPUs held: none)"
COMPANIONS = (("v1", "Service"), ("v1", "Secret"), ("v1", "ConfigMap"))  # deleted with the workload
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _selector(values: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(values.items()))


class KubernetesClient(ProviderClient):
    provider = "kubernetes"

    def __init__(self, cluster: Cluster, workspace_dir: str) -> None:
        super().__init__(cluster, workspace_dir)
        self._apis: dict[tuple[str, str | None], KubeApi] = {}

    # ---- connection ---------------------------------------------------------------------------------
    def _setting(self, key: str) -> Any:
        value = self.cluster.settings.get(key)
        return value if value not in ("", None) else None

    def api(self, request: KubernetesRequest | None = None) -> KubeApi:
        """The apiserver of this cluster: the request's kubeconfig and context (as planned) when there is
        one, else the cluster's settings; a relative path resolves in the workspace; default $KUBECONFIG
        or ~/.kube/config."""
        configured = (request.kubeconfig if request is not None and request.kubeconfig else None) or \
            self._setting("kubeconfig")
        context = (request.context if request is not None and request.context else None) or self._setting("context")
        path = kubeconfig_path(configured, self.workspace_dir)
        key = (path, context)
        if key not in self._apis:
            self._apis[key] = KubeApi(path, context)
        return self._apis[key]

    # ---- planning -------------------------------------------------------------------------------------
    def probe(self) -> Facts:
        """Nodes (allocatable GPUs, labels, taints, readiness) and what the pods that have not ended
        request of them: GPUs in use per node, and GPUs asked for by pods still pending (queued)."""
        api = self.api()
        try:
            nodes = api.request("GET", "/api/v1/nodes", what="listing nodes").get("items") or []
        except ApiError as exc:
            if exc.status == 403:
                raise ProviderError(exc.message, hint="jsctl plans from the cluster's nodes: give its user the "
                                    "right to list nodes (or plan with --refresh=false)") from None
            raise
        live = {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"}
        warnings: tuple[str, ...] = ()
        try:
            pods = api.request("GET", "/api/v1/pods", live, what="listing pods").get("items") or []
        except ApiError as exc:  # no right to see other namespaces' pods: ours at least
            if exc.status != 403:
                raise
            ns = str(self._setting("namespace") or "default")
            pods = api.request("GET", f"/api/v1/namespaces/{ns}/pods", live, what=f"listing pods in {ns}"
                               ).get("items") or []
            warnings = (f"GPUs in use and queued count only namespace {ns}'s pods (no right to list all pods)",)
        from jsctl.providers.kubernetes.inventory import facts_from_nodes
        from jsctl.providers.kubernetes.settings import KubernetesSettings

        resource = KubernetesSettings.of(self.cluster).gpu_resource
        used: dict[str, int] = {}
        queued = 0
        for p in pods:
            gpus = pod_gpus(p, resource)
            node = (p.get("spec") or {}).get("nodeName")
            if node:
                used[node] = used.get(node, 0) + gpus
            elif gpus:
                queued += gpus
        facts = facts_from_nodes(self.cluster.name, nodes, {"gpus_requested": used, "gpus_queued": queued}, resource)
        return Facts(facts.cluster, facts.data, facts.warnings + warnings) if warnings else facts

    def check(self, artifact: RenderedArtifact) -> str:
        """Every document through the apiserver's admission and validation without persisting it
        (server-side apply with dryRun=All): a one-line summary, or the apiserver's refusal."""
        request = artifact.request
        docs = manifest_documents(artifact)
        api = self.api(request)  # type: ignore[arg-type]
        for doc in docs:
            self.apply_object(api, doc, request.namespace, dry_run=True)  # type: ignore[union-attr]
        kinds = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in docs)
        return f"the apiserver at {api.server} accepts {len(docs)} object{'s' if len(docs) != 1 else ''} " \
               f"(dry run): {kinds}"

    # ---- apply ----------------------------------------------------------------------------------------
    def apply_object(self, api: KubeApi, doc: Mapping[str, Any], namespace: str, dry_run: bool = False) -> dict:
        """Server-side apply of one object, field manager `jsctl`, force=True: jsctl owns these objects
        (the plan is their truth), so a field someone else set since (kubectl edit, another manager) is
        taken back instead of failing the apply with a conflict. What the manifest leaves out stays
        with whoever set it (controllers' defaults and status)."""
        meta = doc.get("metadata") or {}
        ns = meta.get("namespace") or namespace
        what = f"{'checking' if dry_run else 'applying'} {doc['kind']} {ns}/{meta['name']}"
        path = api.path(doc["apiVersion"], doc["kind"], ns, meta["name"])
        query = {"fieldManager": FIELD_MANAGER, "force": True, "dryRun": "All" if dry_run else None}
        return api.request("PATCH", path, query, body=dict(doc), content_type=APPLY_PATCH, what=what)

    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        request = artifact.request
        docs = manifest_documents(artifact)
        assert isinstance(request, KubernetesRequest)
        missing = [s for s in artifact.secrets if s not in env]
        if missing:
            raise ProviderError(f"secret{'s' if len(missing) > 1 else ''} not given to submit: {', '.join(missing)}")
        api = self.api(request)
        if request.secret:
            data = {k: base64.b64encode(env[k].encode("utf-8")).decode("ascii") for k in artifact.secrets}
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": request.secret, "namespace": request.namespace,
                                   "labels": dict(request.selector)}, "data": data}
            self.apply_object(api, secret, request.namespace)
        for doc in docs:
            self.apply_object(api, doc, request.namespace)
        w = request.workload
        return Ref.to_handle(self.cluster.name, request.namespace, w["api_version"], w["kind"], w["name"])

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        """The workload already applied for this job id and generation (after a crash), found by the
        selector labels; None when there is none (or it is being deleted)."""
        request = artifact.request
        if not isinstance(request, KubernetesRequest):
            return None
        api = self.api(request)
        w = request.workload
        path = api.path(w["api_version"], w["kind"], request.namespace)
        items = api.request("GET", path, {"labelSelector": _selector(request.selector)},
                            what=f"looking for {w['kind']} {request.namespace}/{w['name']}").get("items") or []
        for obj in items:
            meta = obj.get("metadata") or {}
            if meta.get("name") == w["name"] and not meta.get("deletionTimestamp"):
                return Ref.to_handle(self.cluster.name, request.namespace, w["api_version"], w["kind"], w["name"])
        return None

    # ---- status ---------------------------------------------------------------------------------------
    def _get(self, api: KubeApi, ref: Ref) -> dict | None:
        try:
            return api.request("GET", api.path(ref.api_version, self._kind(api, ref), ref.namespace, ref.name),
                               what=f"reading {ref}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def _kind(self, api: KubeApi, ref: Ref) -> str:
        return api.kind(ref.api_version, ref.kind)

    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        unique = list(dict.fromkeys(handles))
        if not unique:
            return {}
        api = self.api()
        refs = {h: Ref.of(h) for h in unique}
        groups: dict[tuple[str, str, str], list[JobHandle]] = {}
        for h, r in refs.items():
            groups.setdefault((r.namespace, r.api_version, r.kind), []).append(h)
        found: dict[JobHandle, dict] = {}
        kinds: dict[JobHandle, str] = {}
        for (ns, api_version, lkind), hs in groups.items():
            kind = self._kind(api, refs[hs[0]])
            names = sorted({refs[h].name for h in hs})
            if all(_LABEL_VALUE.match(n) and len(n) <= 63 for n in names):
                selector = f"{JOB_ID_LABEL} in ({','.join(names)})"
            else:
                selector = JOB_ID_LABEL
            items = api.request("GET", api.path(api_version, kind, ns), {"labelSelector": selector},
                                what=f"listing {kind} in {ns}").get("items") or []
            by_name = {(o.get("metadata") or {}).get("name"): o for o in items}
            for h in hs:
                kinds[h] = kind
                obj = by_name.get(refs[h].name)
                if obj is None:  # its job-id label is not its name: read it by name
                    obj = self._get(api, refs[h])
                if obj is not None:
                    found[h] = obj
        pods = self._pods(api, {h: o for h, o in found.items()})
        out: dict[JobHandle, LiveStatus] = {}
        gone = [h for h in unique if h not in found]
        tombstones = self._tombstones(api, {refs[h].namespace for h in gone}) if gone else {}
        for h in unique:
            r = refs[h]
            if h in found:
                obj = found[h]
                out[h] = livestatus.live_status(kinds[h], r.group, obj, pods.get(h, ()))
            else:
                out[h] = livestatus.gone(f"{kinds.get(h, r.kind)} {r.namespace}/{r.name}",
                                         tombstones.get((r.namespace, r.name)))
        return out

    def _pods(self, api: KubeApi, objs: Mapping[JobHandle, dict]) -> dict[JobHandle, list[dict]]:
        """The pods of these workloads, one LIST per namespace by their job-id labels."""
        wanted: dict[str, dict[str, JobHandle]] = {}
        for h, obj in objs.items():
            labels = (obj.get("metadata") or {}).get("labels") or {}
            job_id = labels.get(JOB_ID_LABEL)
            if job_id and not (livestatus.condition(obj, "Complete", "Completed", "SuccessCriteriaMet")):
                wanted.setdefault((obj.get("metadata") or {}).get("namespace", ""), {})[job_id] = h
        out: dict[JobHandle, list[dict]] = {}
        for ns, ids in wanted.items():
            selector = f"{JOB_ID_LABEL} in ({','.join(sorted(ids))})"
            items = api.request("GET", f"/api/v1/namespaces/{ns}/pods", {"labelSelector": selector},
                                what=f"listing pods in {ns}").get("items") or []
            for p in items:
                h = ids.get(((p.get("metadata") or {}).get("labels") or {}).get(JOB_ID_LABEL))
                if h is not None:
                    out.setdefault(h, []).append(p)
        return out

    def _tombstones(self, api: KubeApi, namespaces: set[str]) -> dict[tuple[str, str], dict]:
        """The Events cancel left (reason CancelledByJsctl), by (namespace, workload name)."""
        out: dict[tuple[str, str], dict] = {}
        for ns in sorted(namespaces):
            try:
                items = api.request("GET", f"/api/v1/namespaces/{ns}/events",
                                    {"fieldSelector": f"reason={livestatus.CANCEL_REASON}"},
                                    what=f"listing events in {ns}").get("items") or []
            except ApiError as exc:
                if exc.status in (403, 404):
                    continue
                raise
            for e in sorted(items, key=lambda e: e.get("lastTimestamp") or ""):
                out[(ns, (e.get("involvedObject") or {}).get("name", ""))] = e
        return out

    # ---- logs -----------------------------------------------------------------------------------------
    def _job_pods(self, api: KubeApi, ref: Ref, obj: Mapping[str, Any]) -> list[dict]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        sel = {k: labels[k] for k in (JOB_ID_LABEL,) if k in labels}  # the id names the generation too
        if not sel:
            raise ProviderError(f"{ref} has no {JOB_ID_LABEL} label: jsctl did not create it")
        items = api.request("GET", f"/api/v1/namespaces/{ref.namespace}/pods", {"labelSelector": _selector(sel)},
                            what=f"listing the pods of {ref}").get("items") or []
        return livestatus.Pods(items).pods

    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        """The log of the job's pods (in completion-index order; lines prefixed `<index>: ` when there are
        several); `node` picks one by completion index, pod name or node name."""
        api = self.api()
        ref = Ref.of(handle)
        obj = self._get(api, ref)
        if obj is None:
            raise ProviderError(f"{handle} is gone from the apiserver, and its logs with it")
        yield from podlogs.job_logs(api, handle, self._job_pods(api, ref, obj), node, follow, tail)

    # ---- events (jsctl describe) ----------------------------------------------------------------------
    def events(self, handle: JobHandle) -> list[EngineEvent]:
        """Events of the workload and its pods (and what else is named after it), oldest first."""
        api = self.api()
        ref = Ref.of(handle)
        obj = self._get(api, ref)
        names = {ref.name}
        if obj is not None:
            names |= {p["metadata"]["name"] for p in self._job_pods(api, ref, obj)}
        items = api.request("GET", f"/api/v1/namespaces/{ref.namespace}/events", what=f"listing events of {ref}"
                            ).get("items") or []
        out = []
        for e in items:
            inv = e.get("involvedObject") or {}
            if inv.get("name") not in names and not str(inv.get("name", "")).startswith(ref.name + "-"):
                continue
            series = e.get("series") or {}  # events.k8s.io-style repeats: the last time and count are here
            when = e.get("lastTimestamp") or series.get("lastObservedTime") or e.get("eventTime") or \
                e.get("firstTimestamp")
            out.append(EngineEvent(livestatus.parse_time(when), str(e.get("reason") or ""),
                                   str(e.get("message") or "").strip(),
                                   f"{inv.get('kind', '')}/{inv.get('name', '')}", str(e.get("type") or ""),
                                   int(series.get("count") or e.get("count") or 1)))
        return sorted(out, key=lambda e: e.time or 0)

    # ---- lifecycle ------------------------------------------------------------------------------------
    def cancel(self, handle: JobHandle) -> None:
        """Delete the workload (Foreground: its pods go first) and the job's Service, Secret and
        ConfigMaps (by its selector labels); idempotent. An Event records that jsctl deleted it, and
        what it was then, for refresh."""
        api = self.api()
        ref = Ref.of(handle)
        obj = self._get(api, ref)
        if obj is None:
            return
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        kind = obj.get("kind", ref.kind)
        before = livestatus.live_status(kind, ref.group, obj, ())
        if not meta.get("deletionTimestamp"):
            self._tombstone(api, ref, obj, before.phase if before.phase in ("SUCCEEDED", "FAILED") else "CANCELLED")
        path = api.path(ref.api_version, kind, ref.namespace, ref.name)
        self._delete(api, path, f"deleting {kind} {ref.namespace}/{ref.name}")
        sel = {k: labels[k] for k in (JOB_ID_LABEL,) if k in labels}  # the id names the generation too
        if not sel:
            return
        for api_version, k in COMPANIONS:
            items = api.request("GET", api.path(api_version, k, ref.namespace), {"labelSelector": _selector(sel)},
                                what=f"listing the {k}s of {ref}").get("items") or []
            for item in items:
                name = item["metadata"]["name"]
                self._delete(api, api.path(api_version, k, ref.namespace, name), f"deleting {k} {ref.namespace}/{name}")

    def _delete(self, api: KubeApi, path: str, what: str) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
        try:
            api.request("DELETE", path, body=body, content_type="application/json", what=what)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def _tombstone(self, api: KubeApi, ref: Ref, obj: Mapping[str, Any], phase: str) -> None:
        meta = obj.get("metadata") or {}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k in (JOB_ID_LABEL, GENERATION_LABEL)}
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{ref.name}.", "namespace": ref.namespace, "labels": labels,
                              "annotations": {livestatus.PHASE_ANNOTATION: phase}},
                 "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
                                    "name": ref.name, "namespace": ref.namespace, "uid": meta.get("uid")},
                 "reason": livestatus.CANCEL_REASON, "type": "Normal",
                 "message": f"jsctl deleted {obj.get('kind')} {ref.name} and its pods ({phase} then)",
                 "source": {"component": "jsctl", "host": socket.gethostname()},
                 "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            api.request("POST", f"/api/v1/namespaces/{ref.namespace}/events", body=event,
                        content_type="application/json", what=f"recording the cancel of {ref}")
        except ProviderError:
            pass  # no right to write events: refresh will say "gone" instead of CANCELLED

    def _suspend(self, handle: JobHandle, value: bool) -> tuple[KubeApi, Ref, dict]:
        api = self.api()
        ref = Ref.of(handle)
        obj = self._get(api, ref)
        if obj is None:
            raise ProviderError(f"{handle} is gone from the apiserver")
        if (obj.get("kind"), ref.group) not in SUSPENDABLE:
            raise ProviderError(f"{obj.get('kind')} ({ref.api_version}) has no spec.suspend: jsctl cannot "
                                f"{'pause' if value else 'resume'} it",
                                hint="pause works for the job and jobset flavors")
        path = api.path(ref.api_version, obj["kind"], ref.namespace, ref.name)
        # a merge patch, not an apply: spec.suspend then belongs to this request, not to jsctl's manifest,
        # so the next apply of the manifest does not take it back
        api.request("PATCH", path, body={"spec": {"suspend": value}}, content_type=MERGE_PATCH,
                    what=f"{'suspending' if value else 'resuming'} {ref}")
        return api, ref, obj

    def pause(self, handle: JobHandle, timeout_s: float = 300.0, force: bool = False) -> PauseResult:
        """spec.suspend: true. The Job (JobSet) controller deletes the pods: SIGTERM, on which the runtime
        saves a checkpoint and exits; then the job holds no nodes until `resume`. Returns the newest
        complete checkpoint step when its checkpoint directory (JETSTREAM_CHECKPOINT_DIR) can be read
        from here, else no step. A job without a checkpoint directory is refused unless `force` (it then
        loses what it did since it started)."""
        api = self.api()
        ref = Ref.of(handle)
        obj = self._get(api, ref)
        if obj is None:
            raise ProviderError(f"{handle} is gone from the apiserver")
        live = livestatus.live_status(obj.get("kind", ""), ref.group, obj, ())
        if live.phase == "PAUSED":
            return PauseResult(None, "it was already suspended (spec.suspend: true; GPUs held: none)")
        if live.terminal:
            raise ProviderError(f"{handle} is {live.phase} ({live.engine_state}): only pending or running jobs pause")
        ckpt = _env_value(obj, "JETSTREAM_CHECKPOINT_DIR")
        if not ckpt and not force:
            raise ProviderError(f"{handle} writes no checkpoints (no JETSTREAM_CHECKPOINT_DIR in its pods), so "
                                "pausing it would lose its progress",
                                hint="declare a checkpoint output, or pass --force to suspend it anyway (its pods "
                                     "are deleted; on resume it starts from the beginning)")
        api, ref, obj = self._suspend(handle, True)
        sel = {k: v for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items() if k == JOB_ID_LABEL}
        deadline = time.monotonic() + timeout_s
        while sel:
            pods = api.request("GET", f"/api/v1/namespaces/{ref.namespace}/pods", {"labelSelector": _selector(sel)},
                               what=f"listing the pods of {ref}").get("items") or []
            if not [p for p in pods if (p.get("status") or {}).get("phase") in ("Pending", "Running")]:
                break
            if time.monotonic() > deadline:
                raise ProviderError(f"{handle} is suspended, but its pods did not stop within {timeout_s:g}s "
                                    "(they are still saving a checkpoint, or their grace period is longer)",
                                    hint="jsctl status shows when they are gone; jsctl resume undoes the pause")
            time.sleep(0.5)
        if not ckpt:
            return PauseResult(None, f"without a checkpoint (--force), {SUSPENDED}; it saves no checkpoints, so "
                                     "its progress is lost: jsctl resume starts it over from the beginning")
        step = _latest_step(ckpt)
        if step is None:
            return PauseResult(None, f"{SUSPENDED}; no complete checkpoint in {ckpt} is visible from here, so the "
                                     "step it continues from is not known: on jsctl resume it restores its newest "
                                     "checkpoint, if it saved one")
        return PauseResult(step, SUSPENDED)

    def resume(self, handle: JobHandle) -> None:
        """spec.suspend: false; the controller starts the pods again (the runtime restores the newest
        checkpoint)."""
        self._suspend(handle, False)


def pod_gpus(pod: Mapping[str, Any], resource: str = GPU) -> int:
    """GPUs a pod requests: the larger of its containers' sum and any init container's (as the scheduler counts)."""
    spec = pod.get("spec") or {}

    def gpus(c: Mapping[str, Any]) -> int:
        res = c.get("resources") or {}
        value = (res.get("requests") or {}).get(resource) or (res.get("limits") or {}).get(resource) or 0
        try:
            return int(value)
        except (TypeError, ValueError):
            return 0

    return max(sum(gpus(c) for c in spec.get("containers") or ()),
               max((gpus(c) for c in spec.get("initContainers") or ()), default=0))


def _env_value(obj: Mapping[str, Any], name: str) -> str | None:
    """A literal env value of the workload's pod template(s), wherever the template sits in its spec."""
    stack: list[Any] = [obj.get("spec") or {}]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for c in node.get("containers") or () if isinstance(node.get("containers"), list) else ():
                for e in c.get("env") or ():
                    if e.get("name") == name and e.get("value"):
                        return str(e["value"])
            stack.extend(v for k, v in node.items() if isinstance(v, (dict, list)) and k != "containers")
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _latest_step(directory: str) -> int | None:
    """The newest complete checkpoint (`step-N` holding COMPLETE) in the directory, where this machine
    sees it (a shared file system); None otherwise."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return None
    steps = [int(m.group(1)) for e in entries if (m := re.match(r"^step-(\d+)$", e))
             and os.path.isfile(os.path.join(directory, e, "COMPLETE"))]
    return max(steps) if steps else None

