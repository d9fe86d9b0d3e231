#!/usr/bin/env bash
# Checks the cluster of scripts/k8s-up.sh by hand: scheduling on the fake GPU nodes, Jobs that
# complete and fail as the kwok stages say, JobSet, the Volcano and Trainer CRDs, logs, deletion.
#   bash scripts/k8s-up.sh up && bash scripts/k8s/selftest.sh
# Works in namespace jsctl-selftest (deleted at the end); about 40 s.
set -euo pipefail

BASE=${JSCTL_K8S_BASE:-/tmp/jsctl-k8s}
export KUBECONFIG=${JSCTL_K8S_KUBECONFIG:-$BASE/kubeconfig}
NS=jsctl-selftest
k() { kubectl --request-timeout=20s -n "$NS" "$@"; }
ok() { printf 'selftest: ok   %s\n' "$*" >&2; }
fail() { printf 'selftest: FAIL %s\n' "$*" >&2; exit 1; }
t0=$SECONDS

kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$NS" >/dev/null

gpu_job() {  # gpu_job NAME KWOK-LABELS(yaml flow entries, may be empty) [BACKOFF]
  cat <<EOF
apiVersion: v1
kind: Service
metadata: {name: $1}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {job-name: $1}
---
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {app: selftest}}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  backoffLimit: ${3:-0}
  template:
    metadata: {labels: {app: selftest $2}}
    spec:
      subdomain: $1
      restartPolicy: Never
      nodeSelector: {jsctl.dev/pool: a100}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: trainer
        image: example.invalid/trainer:1
        resources: {limits: {nvidia.com/gpu: "8"}, requests: {cpu: "8", memory: 64Gi}}
EOF
}

# 1. four 8-GPU pods fill the four a100 nodes; a fifth stays Pending (Unschedulable)
gpu_job long ", kwok-run: long" | k apply -f - >/dev/null
k wait --for=jsonpath='{.status.ready}'=4 job/long --timeout=60s >/dev/null
nodes=$(k get pods -l job-name=long -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | tr '\n' ' ')
[[ $nodes == "a100-0 a100-1 a100-2 a100-3 " ]] || fail "pods of job long on: $nodes"
ip=$(k get pod -l job-name=long,batch.kubernetes.io/job-completion-index=0 -o jsonpath='{.items[0].status.podIP}')
[[ -n $ip ]] || fail "no pod IP"
ok "indexed job: 4 pods Running on $nodes(pod 0 at $ip)"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: fifth}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]
EOF
k wait --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'=Unschedulable pod/fifth --timeout=30s >/dev/null
ok "fifth 8-GPU pod Pending: $(k get pod fifth -o jsonpath='{.status.conditions[0].message}')"
pod0=$(k get pod -l job-name=long,batch.kubernetes.io/job-completion-index=0 -o jsonpath='{.items[0].metadata.name}')
if out=$(k logs "$pod0" 2>&1); then ok "kubectl logs $pod0: $out"; else printf 'selftest: warn kubectl logs failed: %s\n' "$out" >&2; fi

# 2. suspend deletes the pods; foreground deletion of the Job finishes; the fifth pod then runs
k patch job long --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
k wait --for=condition=Suspended job/long --timeout=30s >/dev/null
k wait --for=delete pod -l job-name=long --timeout=30s >/dev/null
ok "suspended job: pods gone"
k delete job long --cascade=foreground --timeout=30s >/dev/null
k wait --for=jsonpath='{.status.phase}'=Running pod/fifth --timeout=30s >/dev/null
ok "job deleted (foreground); fifth pod now Running on $(k get pod fifth -o jsonpath='{.spec.nodeName}')"
k delete pod fifth --timeout=30s >/dev/null

# 3. the same job without labels completes; with kwok-exit: fail it fails; requeue exits 75
gpu_job done "" | k apply -f - >/dev/null
k wait --for=condition=Complete job/done --timeout=60s >/dev/null
ok "indexed job Complete ($(k get job done -o jsonpath='{.status.succeeded}') succeeded)"
k delete job done --wait=false >/dev/null
gpu_job bad ", kwok-exit: fail" | k apply -f - >/dev/null
k wait --for=condition=Failed job/bad --timeout=60s >/dev/null
ok "job with kwok-exit=fail Failed: $(k get job bad -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')"
k delete job bad --wait=false >/dev/null
gpu_job requeue ", kwok-exit: requeue" | k apply -f - >/dev/null
k wait --for=condition=Failed job/requeue --timeout=60s >/dev/null
code=$(k get pods -l job-name=requeue -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}')
[[ $code == 75 ]] || fail "requeue exit code $code"
ok "job with kwok-exit=requeue: exit code $code"
k delete job requeue --wait=false >/dev/null

# 4. JobSet (its controller and webhooks)
k apply -f - >/dev/null <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        completionMode: Indexed
        completions: 2
        parallelism: 2
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            nodeSelector: {jsctl.dev/pool: cpu}
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
EOF
k wait --for=condition=Completed jobset/js --timeout=60s >/dev/null
ok "JobSet Completed (pods: $(k get pods -l jobset.sigs.k8s.io/jobset-name=js -o jsonpath='{.items[*].spec.hostname}'))"

# 5. Volcano Job and TrainJob objects are accepted and read back (no controllers for them)
k apply -f - >/dev/null <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj}
spec:
  minAvailable: 2
  schedulerName: volcano
  plugins: {pytorch: ["--master=master", "--worker=worker", "--port=23456"], svc: []}
  tasks:
  - name: master
    replicas: 1
    template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: x}]}}
  - name: worker
    replicas: 1
    template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: x}]}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, image: x, resourcesPerNode: {limits: {nvidia.com/gpu: "8"}}}
EOF
[[ $(k get jobs.batch.volcano.sh vj -o jsonpath='{.spec.tasks[1].name}') == worker ]] || fail "volcano job"
[[ $(k get trainjob tj -o jsonpath='{.spec.trainer.numNodes}') == 2 ]] || fail "trainjob"
ok "Volcano Job and TrainJob stored and read back"

kubectl delete namespace "$NS" --wait=false >/dev/null
ok "all in $((SECONDS - t0)) s"
