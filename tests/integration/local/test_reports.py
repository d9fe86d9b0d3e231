"""cluster status and report cost against the local provider, and the budget gate in plan."""
import json

from localjobs import job_yaml, run_cli, wait_phase

PRICED = """clusters:
  - name: cheap
    provider: local
    max_workers: 4
"""


def test_cluster_status_and_report_cost(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["sleep", "1"], "compute:\n  resources:\n    gpu: {count: 2}\n"))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    wait_phase("a")
    code, out, err = run_cli("cluster", "status", "--json")
    assert code == 0, err
    row = json.loads(out)["clusters"][0]
    assert row["cluster"] == "local" and row["gpus_total"] >= 2 and row["jobs_in_state"] == ["job.a"]
    assert row["reachable"] and not row["elastic"] and row["gpus_free"] == row["gpus_total"]  # a has ended
    assert row["gpus_queued"] == 0 and row["jobs_running"] == []
    code, out, err = run_cli("report", "cost", "--json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["rows"] if "rows" in doc else doc["jobs"]
    assert rows[0]["address"] == "job.a" and rows[0]["actual"] == 0.0 and rows[0]["hours"] > 0
    code, out, _ = run_cli("report", "cost", "a", "--since", "1d")
    assert code == 0 and "job.a" in out or "a " in out


def test_budget_gate(ws):
    (ws / "jsctl.yaml").write_text("clusters:\n  - name: hpc\n    provider: slurm\n    partitions:\n"
                                   "      - {name: gpu, gpu_type: a100-80gb, gpus_per_node: 8, nodes: 4, cpus_per_node: 64,"
                                   " memory_per_node: 1Ti, interconnect: infiniband, gpu_hour_rate: 2.0}\n")
    (ws / "a.yaml").write_text(job_yaml("big", ["train.py"], "compute:\n  resources:\n    gpu: {type: a100, count: 16}\n"
                                        "  time_limit: 24h\n"))
    code, out, err = run_cli("plan", "-f", "a.yaml", "--max-cost", "500")
    assert code == 1 and "over the budget of $500.00" in err and "job.big" in err, err
    code, out, err = run_cli("plan", "-f", "a.yaml", "--max-cost", "1000")
    assert code == 0, err
    assert "$32.00/h, at most $768.00 for time_limit 24h" in out


def test_cluster_status_counts_the_gpus_of_running_jobs(ws):
    (ws / "r.yaml").write_text(job_yaml("r", ["sleep", "30"], "compute:\n  resources:\n    gpu: {count: 2}\n"))
    assert run_cli("apply", "-f", "r.yaml", "--auto-approve")[0] == 0
    wait_phase("r", ("RUNNING",))
    code, out, err = run_cli("cluster", "status", "--json")
    assert code == 0, err
    row = json.loads(out)["clusters"][0]
    assert row["jobs_running"] == ["job.r"] and row["gpus_free"] == row["gpus_total"] - 2
    code, out, err = run_cli("cluster", "status")
    assert code == 0 and out.splitlines()[0].split()[:5] == ["CLUSTER", "PROVIDER", "GPUS", "FREE", "QUEUED"]
    assert "1 running / 1" in out
    assert run_cli("stop", "r")[0] == 0
