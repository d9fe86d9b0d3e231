#!/usr/bin/env bash
# Install what the tests need and run them. CI sets JSCTL_REQUIRE_SLURM=1 (and JSCTL_REQUIRE_K8S=1): then a Slurm cluster
# must come up (scripts/slurm-up.sh) and its integration tests must run; elsewhere they skip
# with a reason when Slurm cannot start (e.g. without root).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0 numpy   # exactly this: an unpinned torch pulls a multi-GB CUDA build
python -m pip install -q -e '.[runtime,test,k8s,aws,gcp,azure,dashboard,hf,lightning]'
python -m pip install -q -e tests/providers/jsctl-testcloud   # the out-of-tree provider the contract suite runs
# Debian's Chromium for the dashboard's browser tests (Playwright drives it; it never downloads a browser)
if ! command -v chromium >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }) \
    || echo "note: chromium did not install; the dashboard's browser tests will skip" >&2
fi
down=()   # the engines this script started, stopped on exit
trap 'for e in "${down[@]}"; do bash "scripts/$e-up.sh" down || true; done' EXIT
if [[ -x scripts/slurm-up.sh ]]; then
  if bash scripts/slurm-up.sh up; then
    export SLURM_CONF=${SLURM_CONF:-${SLURM_BASE:-/tmp/jsctl-slurm}/etc/slurm.conf}
    down+=(slurm)
  elif [[ ${JSCTL_REQUIRE_SLURM:-0} == 1 ]]; then
    echo "error: Slurm did not start and JSCTL_REQUIRE_SLURM=1" >&2
    exit 1
  else
    echo "note: Slurm did not start; its integration tests will skip" >&2
  fi
fi
# A Kubernetes control plane (kube-apiserver, etcd, controller-manager, scheduler, kwok nodes, the JobSet
# controller) built from the Go module proxy on first use (cached in ~/.cache/jsctl/k8s); CI sets
# JSCTL_REQUIRE_K8S=1: then it must start and its tests must run.
if [[ -x scripts/k8s-up.sh ]]; then
  if bash scripts/k8s-up.sh up; then
    down+=(k8s)
  elif [[ ${JSCTL_REQUIRE_K8S:-0} == 1 ]]; then
    echo "error: Kubernetes did not start and JSCTL_REQUIRE_K8S=1" >&2
    exit 1
  else
    echo "note: Kubernetes did not start; its integration tests will skip" >&2
  fi
fi
python -m pytest -q --durations=25 "$@"   # the slowest tests, to keep CI in its time
