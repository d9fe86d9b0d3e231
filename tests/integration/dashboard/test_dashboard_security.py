"""The real `jsctl dashboard` over HTTP (urllib): off loopback every request needs the printed token
(401 without it); without --allow-actions the action endpoints do not exist (404); with it, a
cross-site POST is refused (403) and one from the page itself stops the job as `jsctl stop` does."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.cookiejar import CookieJar

import pytest

from dashkit import cli, kill_jobs, phase, require_server, serving
from slurmci import wait_for  # the tests' one wait (not Slurm's only)


@pytest.fixture
def ws(tmp_path):
    require_server()
    yield tmp_path
    kill_jobs(tmp_path)


def call(url: str, method: str = "GET", headers: dict | None = None,
         opener: urllib.request.OpenerDirector | None = None) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=b"" if method == "POST" else None)
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=30) as response:
            status, body = response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


def sleeper(ws) -> str:
    (ws / "sleeper.yaml").write_text("version: jetstream.v1\njob:\n  name: sleeper\n"
                                     "lifecycle:\n  command: [sleep, '120']\n")
    code, _, err = cli(ws, "apply", "-f", "sleeper.yaml", "--auto-approve")
    assert code == 0, err
    wait_for(lambda: phase(ws, "sleeper") == "RUNNING", 60, what="sleeper running")
    return "job.sleeper"


def test_a_non_local_host_refuses_requests_without_the_printed_token(ws):
    with serving(ws, "--host", "0.0.0.0") as served:
        assert served.token and f"token: {served.token}" in served.output
        assert served.printed.startswith("http://0.0.0.0:")
        for path in ("/", "/api/jobs", "/static/app.js", "/api/session"):
            status, body = call(served.url + path)
            assert status == 401, (path, status, body)
        assert call(served.url + "/api/jobs", headers={"Authorization": "Bearer not-it"})[0] == 401
        status, body = call(served.url + "/api/jobs", headers={"Authorization": f"Bearer {served.token}"})
        assert status == 200 and body["jobs"] == []
        assert call(f"{served.url}/api/jobs?token={served.token}")[0] == 200
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        status, page = call(f"{served.url}/?token={served.token}", opener=browser)  # to / with the cookie
        assert status == 200 and "/static/app.js" in page
        assert call(served.url + "/api/jobs", opener=browser)[0] == 200  # the cookie from now on
        assert call(served.url + "/api/jobs")[0] == 401  # still none without it


def test_the_loopback_default_needs_no_token_but_its_own_host_name(ws):
    with serving(ws) as served:
        assert served.token is None and served.printed.startswith("http://127.0.0.1:")
        assert "token" not in served.output
        assert call(served.url + "/api/jobs")[0] == 200
        # a page whose DNS name was rebound to 127.0.0.1 sends its own Host: refused
        assert call(served.url + "/api/jobs", headers={"Host": "attacker.example"})[0] == 403


def test_actions_are_absent_read_only_and_cross_site_posts_are_refused(ws):
    address = sleeper(ws)
    with serving(ws) as served:
        session = call(served.url + "/api/session")[1]
        assert session["actions"] == []
        status, body = call(f"{served.url}/api/jobs/{address}")
        assert status == 200, body  # the job is there...
        own = {"Origin": served.url, "X-Jsctl-Csrf": session["csrf"], "Sec-Fetch-Site": "same-origin"}
        for verb in ("stop", "pause", "resume"):  # ...but its actions are not
            assert call(f"{served.url}/api/jobs/{address}/{verb}", "POST", own)[0] == 404, verb
    assert phase(ws, "sleeper") == "RUNNING"
    with serving(ws, "--allow-actions") as served:
        session = call(served.url + "/api/session")[1]
        assert session["actions"] == ["stop", "pause", "resume"]
        csrf = session["csrf"]
        stop = f"{served.url}/api/jobs/{address}/stop"
        refused = [
            {"Origin": "http://attacker.example", "X-Jsctl-Csrf": csrf},
            {"Origin": "null", "X-Jsctl-Csrf": csrf},
            {"Sec-Fetch-Site": "cross-site", "X-Jsctl-Csrf": csrf},
            {"Origin": served.url},  # no CSRF header: a form post from another site cannot set one
            {"Origin": served.url, "X-Jsctl-Csrf": "guessed"},
        ]
        for headers in refused:
            status, body = call(stop, "POST", headers)
            assert status == 403, (headers, status, body)
        assert phase(ws, "sleeper") == "RUNNING"
        status, body = call(stop, "POST", {"Origin": served.url, "X-Jsctl-Csrf": csrf, "Sec-Fetch-Site": "same-origin"})
        assert status == 200 and body["verb"] == "stop" and body["address"] == address, body
    assert phase(ws, "sleeper") == "CANCELLED"
