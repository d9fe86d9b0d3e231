"""Imports follow the flow of data (issue 9): a stage imports the shared model and the stages it
builds on, never a stage that comes after it. Every import counts, also those inside functions.

    model, errors     the types every stage passes; import nothing of the stages
    files             atomic writes (temp file, fsync, rename), for any stage that writes
    config            files → documents, variables, typed specs; the workspace
    render            the Jinja2 environment and the launch contract, from a JobContext
    providers         each engine's pure half and client (they use render; they never plan)
    plan              resolve, place, size, price; asks providers (through the registry) for offers,
                      renders and diffs: config → plan → providers (it shows the launch command)
    state             reading and writing the state document (store, lock)
    apply             carries out a plan through provider clients and records state
    api               the SDK: every verb as a function
    cli               parses arguments and prints what api returns
    dashboard         a web page over api (`jsctl dashboard`, started by the cli)
"""
from __future__ import annotations

import ast
import pathlib

import jsctl

ROOT = pathlib.Path(jsctl.__file__).parent
BASE = {"jsctl", "jsctl.errors", "jsctl.model", "jsctl.files"}
ALLOWED = {
    "jsctl.model": {"jsctl", "jsctl.errors", "jsctl.model"},
    "jsctl.errors": {"jsctl", "jsctl.errors", "jsctl.config"},  # config only for a type hint (Diagnostic)
    "jsctl.files": {"jsctl", "jsctl.errors"},  # atomic file writes, for every stage that writes
    "jsctl.config": BASE | {"jsctl.config"},
    "jsctl.render": BASE | {"jsctl.config", "jsctl.render"},
    "jsctl.providers": BASE | {"jsctl.config", "jsctl.render", "jsctl.providers"},
    "jsctl.plan": BASE | {"jsctl.config", "jsctl.render", "jsctl.providers", "jsctl.plan"},
    "jsctl.state": BASE | {"jsctl.state"},
    "jsctl.apply": BASE | {"jsctl.config", "jsctl.plan", "jsctl.providers", "jsctl.state", "jsctl.apply"},
    "jsctl.metrics": BASE | {"jsctl.metrics"},
    "jsctl.api": BASE | {"jsctl.config", "jsctl.plan", "jsctl.providers", "jsctl.state", "jsctl.apply",
                         "jsctl.metrics", "jsctl.api"},
    "jsctl.dashboard": BASE | {"jsctl.config", "jsctl.api", "jsctl.dashboard"},  # a view of the SDK, as the CLI is
    "jsctl.cli": BASE | {"jsctl.config", "jsctl.api", "jsctl.cli", "jsctl.metrics", "jsctl.plan", "jsctl.dashboard"},
    "jsctl.__main__": {"jsctl.cli"},
}


def _stage(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _imports(path: pathlib.Path, module: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("jsctl")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level] if not path.name == "__init__.py" else \
                    module.split(".")[: len(module.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("jsctl"):
                if name == "jsctl":  # `from jsctl import api` imports the module jsctl.api
                    top = {"__version__", "JSON_FORMAT_VERSION"}  # constants of the package itself
                    found += [(node.lineno, f"jsctl.{a.name}") for a in node.names if a.name not in top]
                    found += [(node.lineno, "jsctl") for a in node.names if a.name in top]
                else:
                    found.append((node.lineno, name))
    return found


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts)


def test_every_import_follows_the_flow():
    bad = []
    for path, module in _modules():
        stage = _stage(module)
        if stage == "jsctl":
            continue
        allowed = ALLOWED.get(stage)
        assert allowed is not None, f"{module}: a new top-level module; give it a place in ALLOWED"
        for line, name in _imports(path, module):
            if _stage(name) not in allowed:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {stage} imports {name}")
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_the_model_imports_no_third_party_package_but_the_standard_library():
    import sys

    for path, module in _modules():
        if _stage(module) != "jsctl.model":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                top = name.split(".")[0]
                assert top == "jsctl" or top in sys.stdlib_module_names, f"{module} imports {name}"
