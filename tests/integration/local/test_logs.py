"""`jsctl logs` shows the program's output; the runtime's JSON metric lines only with --metrics
(`jsctl metrics` is where they are read). Issue 10."""
import json

from localjobs import job_yaml, run_cli, wait_phase

METRIC = json.dumps({"jetstream": "metrics", "step": 1, "loss": 2.5})


def test_logs_hide_metric_lines_unless_asked(ws):
    (ws / "job.yaml").write_text(job_yaml("talk", ["bash", "-c", f"echo before; echo '{METRIC}'; echo after"]))
    assert run_cli("apply", "-f", "job.yaml", "--auto-approve")[0] == 0
    assert wait_phase("talk")["phase"] == "SUCCEEDED"
    code, out, err = run_cli("logs", "talk")
    assert code == 0, err
    assert "before" in out.splitlines() and "after" in out.splitlines()
    assert METRIC not in out.splitlines()  # (the launch line quotes the command, which is not a metric line)
    code, out, err = run_cli("logs", "talk", "--metrics")
    assert code == 0 and METRIC in out.splitlines() and "before" in out.splitlines(), err
    code, out, err = run_cli("metrics", "talk")
    assert code == 0 and "2.5" in out, (out, err)
    # --tail counts the lines that are shown: the metric line before jsctl's closing line is not one
    (ws / "job.yaml").write_text(job_yaml("tail", ["bash", "-c", f"echo first; echo last; echo '{METRIC}'"]))
    assert run_cli("apply", "-f", "job.yaml", "--auto-approve")[0] == 0
    assert wait_phase("tail")["phase"] == "SUCCEEDED"
    code, out, err = run_cli("logs", "tail", "--tail", "2")
    assert code == 0 and out.splitlines()[0] == "last" and len(out.splitlines()) == 2, (out, err)
