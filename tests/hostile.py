"""Values that break naive shell quoting, and a job that reports how they arrived (argv and env)."""
import json
import sys

HOSTILE = [
    "it's",
    'say "hi"',
    "$(touch PWNED_subshell)",
    "`touch PWNED_backtick`",
    "; touch PWNED_semicolon",
    "a && touch PWNED_and | cat",
    "$HOME and $$ and $1",
    "back\\slash \\\" end\\",
    "line one\nline two",
    "*",
    "~",
    "--nodes=99",
    "",
    " leading and trailing ",
    "ünïcödé ✓",
]
# Run as `python -c DUMP ARGS...`: writes its argv and the variables named in $WANT to $DUMP.
DUMP = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': {k: os.environ.get(k) for k in "
        "os.environ['WANT'].split(',')}}, open(os.environ['DUMP'], 'w'))")


def hostile_job(extra_env: str, want: tuple[str, ...], environment_tail: str = "") -> str:
    """A CPU job named `quoting` whose env values V0.. and arguments are HOSTILE; `extra_env` is more
    env_vars lines (4-space indented), `want` their names to dump, `environment_tail` more
    `environment:` keys (e.g. secrets)."""
    env = "\n".join(f"    V{i}: {json.dumps(v)}" for i, v in enumerate(HOSTILE))
    names = ",".join([*(f"V{i}" for i in range(len(HOSTILE))), *want])
    args = ", ".join(json.dumps(v) for v in HOSTILE)
    return f"""\
version: jetstream.v1
job:
  name: quoting
compute:
  resources:
    cpu:
      count: 1
environment:
  env_vars:
    WANT: "{names}"
{extra_env}
{env}
{environment_tail}lifecycle:
  command: [{json.dumps(sys.executable)}, -c, {json.dumps(DUMP)}, {args}]
  pre_run:
    - command: [sh, -c, 'printf "%s" "$0" > pre.txt', "it's $(touch PWNED_pre); `id`"]
"""
