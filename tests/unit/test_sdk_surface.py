"""The SDK's public surface (`import jsctl`, docs/sdk.md): every name resolves, results are frozen
dataclasses, errors are JsctlErrors, and nothing of it is imported until used."""
import dataclasses
import importlib
import inspect
import pathlib
import subprocess
import sys

import jsctl
import jsctl.errors

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def _public():
    return {name: getattr(jsctl, name) for name in jsctl.__all__}


def test_every_public_name_resolves_and_functions_are_typed_and_documented():
    doc = DOC.read_text()
    for name, value in _public().items():
        assert value is not None, name
        if inspect.isfunction(value):
            assert inspect.signature(value).return_annotation is not inspect.Signature.empty, name
            assert f"jsctl.{name}(" in doc, f"docs/sdk.md does not document jsctl.{name}"


def test_results_are_frozen_dataclasses_and_errors_are_jsctl_errors():
    classes = {n: v for n, v in _public().items() if inspect.isclass(v)}
    for name, cls in classes.items():
        if issubclass(cls, BaseException):
            assert issubclass(cls, jsctl.JsctlError), name
        else:
            assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
    defined = {n for n, v in vars(jsctl.errors).items() if inspect.isclass(v) and issubclass(v, jsctl.JsctlError)}
    assert defined <= set(classes), defined - set(classes)


def test_import_jsctl_imports_nothing_of_the_sdk_until_used():
    code = ("import sys, jsctl; assert [m for m in sys.modules if m.startswith('jsctl.')] == [], sys.modules\n"
            "jsctl.status; assert 'jsctl.api' in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0
    code = ("import sys\nfrom jsctl.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'jsctl.api' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_functions_named_like_submodules_stay_functions(monkeypatch):
    importlib.import_module("jsctl.plan.model")
    importlib.import_module("jsctl.apply")
    importlib.import_module("jsctl.metrics")
    from jsctl.api import flows, jobs, plans

    assert jsctl.plan is plans.plan and jsctl.apply is flows.apply and jsctl.metrics is jobs.metrics
    assert sys.modules["jsctl.apply"].ApplyResult is jsctl.ApplyResult
    monkeypatch.setattr(jsctl, "plan", len)
    assert jsctl.plan is len
    monkeypatch.undo()
    assert jsctl.plan is plans.plan
