"""The dashboard's app (jsctl.dashboard.app) through Starlette's TestClient: JSON endpoints, the token off
loopback (401), actions only with --allow-actions (404), cross-site and CSRF checks (403); what data.py
makes of the runtime's lines; and that no other verb imports starlette or uvicorn."""
from __future__ import annotations

import subprocess
import sys

import pytest

from jsctl import api
from jsctl.cli import main
from jsctl.dashboard.data import Dashboard, layout, metric_record, workflows
from jsctl.dashboard.security import Guard

LOCAL = "http://127.0.0.1:8765"
HEAVY = ("starlette", "uvicorn", "anyio", "httpx", "jsctl.dashboard.app", "jsctl.dashboard.server")


@pytest.mark.parametrize("argv", [["--help"], ["dashboard", "--help"], ["status"], ["plan", "--help"]])
def test_no_other_verb_imports_the_dashboards_dependencies(tmp_path, argv):
    code = ("import sys\nfrom jsctl.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in %r or m in %r)\n"
            "assert not heavy, heavy\n") % (argv, HEAVY[:4], HEAVY[4:])
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_without_the_extra_the_command_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "starlette", None)  # `import starlette` fails: as if not installed
    for name in ("jsctl.dashboard.app", "jsctl.dashboard.server"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["dashboard", "--port", "0"])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "pip install 'jsctl[dashboard]'" in err and "Traceback" not in err


def test_metric_records_and_where_the_ranks_are():
    assert metric_record('[rank1] {"jetstream": "metrics", "step": 10, "loss": 0.5}')["loss"] == 0.5
    assert metric_record("plain text") is None and metric_record('{"jetstream": "metrics", "step": ') is None
    assert metric_record('{"jetstream": 3}') is None
    nodes = layout({"nodes": 2, "gpus_per_node": 4, "gpu_type": "H100"}, ("gpu-a", "gpu-b"))
    assert [(n["name"], n["ranks"]) for n in nodes] == [("gpu-a", [0, 1, 2, 3]), ("gpu-b", [4, 5, 6, 7])]
    assert [n["name"] for n in layout({"nodes": 2, "gpus_per_node": 1}, ())] == ["node 0", "node 1"]
    assert layout({}, ("x",)) == []


def test_workflow_dags_keep_only_edges_inside_state():
    jobs = [{"address": "workflow.w.job.a", "workflow": "w", "depends_on": []},
            {"address": "workflow.w.job.b", "workflow": "w", "depends_on": ["workflow.w.job.a", "workflow.w.job.gone"]},
            {"address": "job.solo", "workflow": None, "depends_on": []}]
    assert workflows(jobs) == {"w": {"jobs": ["workflow.w.job.a", "workflow.w.job.b"],
                                     "edges": [["workflow.w.job.a", "workflow.w.job.b"]]}}


def client(tmp_path, monkeypatch, host="127.0.0.1", actions=False):
    pytest.importorskip("starlette")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install -e '.[test]')")
    from starlette.testclient import TestClient

    from jsctl.dashboard.app import create_app

    monkeypatch.chdir(tmp_path)
    guard = Guard.for_bind(host, 8765)
    app = create_app(Dashboard(api.open_workspace(None)), guard, actions)
    return TestClient(app, base_url=LOCAL if guard.token is None else "http://10.0.0.5:8765"), guard


def test_endpoints_answer_json(tmp_path, monkeypatch):
    c, guard = client(tmp_path, monkeypatch)
    page = c.get("/")
    assert page.status_code == 200 and guard.csrf in page.text and "/static/app.js" in page.text
    assert c.get("/static/app.js").status_code == 200 and c.get("/static/app.css").status_code == 200
    assert c.get("/api/jobs").json()["jobs"] == []
    assert [x["cluster"] for x in c.get("/api/clusters").json()["clusters"]] == ["local"]
    assert c.get("/api/cost").json()["rows"] == []
    assert c.get("/api/session").json()["csrf"] == guard.csrf
    assert c.get("/api/jobs/nope").status_code == 404


def test_loopback_refuses_a_foreign_host_header(tmp_path, monkeypatch):
    c, _ = client(tmp_path, monkeypatch)
    assert c.get("/api/jobs", headers={"Host": "evil.example:8765"}).status_code == 403


def test_a_non_local_host_needs_the_token(tmp_path, monkeypatch):
    c, guard = client(tmp_path, monkeypatch, host="0.0.0.0")
    assert guard.token
    assert c.get("/api/jobs").status_code == 401
    assert c.get("/").status_code == 401
    assert c.get("/api/jobs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/api/jobs", headers={"Authorization": f"Bearer {guard.token}"}).status_code == 200
    first = c.get(f"/?token={guard.token}", follow_redirects=False)
    assert first.status_code == 303 and "token" not in first.headers["location"]
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert c.get("/api/jobs").status_code == 200  # the cookie from now on


def test_actions_do_not_exist_without_allow_actions(tmp_path, monkeypatch):
    c, guard = client(tmp_path, monkeypatch)
    headers = {"X-Jsctl-Csrf": guard.csrf, "Origin": LOCAL}
    for verb in ("stop", "pause", "resume"):
        assert c.post(f"/api/jobs/quickstart/{verb}", headers=headers).status_code == 404


def test_cross_site_and_csrf_less_posts_are_refused(tmp_path, monkeypatch):
    c, guard = client(tmp_path, monkeypatch, actions=True)
    assert c.post("/api/jobs/nope/stop", headers={"X-Jsctl-Csrf": guard.csrf,
                                                  "Origin": "http://evil.example"}).status_code == 403
    assert c.post("/api/jobs/nope/stop", headers={"X-Jsctl-Csrf": guard.csrf,
                                                  "Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert c.post("/api/jobs/nope/stop", headers={"Origin": LOCAL}).status_code == 403
    assert c.post("/api/jobs/nope/stop", headers={"Origin": LOCAL, "X-Jsctl-Csrf": "wrong"}).status_code == 403
    # from the page itself: past the checks, and the job is unknown
    ok = c.post("/api/jobs/nope/stop", headers={"Origin": LOCAL, "X-Jsctl-Csrf": guard.csrf,
                                                "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 404


def test_a_non_editable_install_ships_the_page():
    import fnmatch
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["jsctl"]
    static = [p.relative_to(root / "jsctl").as_posix() for p in (root / "jsctl" / "dashboard" / "static").iterdir()]
    assert {"dashboard/static/index.html", "dashboard/static/app.js", "dashboard/static/app.css"} <= set(static)
    assert all(any(fnmatch.fnmatch(name, pattern) for pattern in patterns) for name in static), static


def test_a_multi_process_metric_line_gives_a_curve_per_rank():
    from jsctl.dashboard.data import per_rank

    line = {"jetstream": "metrics", "step": 20, "loss": 0.93, "time": 5.0, "peak_mem_bytes": 7,
            "ranks": {"loss": [0.93, 0.84, None], "step_time_s": [0.01, 0.02, 0.03], "peak_mem_bytes": [7, 8, 9],
                      "not_a_curve": [1, 2, 3]}}
    assert per_rank(line) == [(1, {"step": 20, "time": 5.0, "loss": 0.84, "step_time_s": 0.02, "peak_mem_bytes": 8}),
                              (2, {"step": 20, "time": 5.0, "loss": None, "step_time_s": 0.03, "peak_mem_bytes": 9})]
    assert per_rank({"jetstream": "metrics", "step": 1, "loss": 1.0}) == []
