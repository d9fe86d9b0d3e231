"""Build a typed JobSpec (jsctl.model.spec) from a validated job document."""
from __future__ import annotations

from typing import Any

from jsctl.config.quantities import parse_bytes, parse_duration, parse_frequency, parse_parameters
from jsctl.model.spec import Compute, Environment, Frequency, Gpu, JobSpec, Lifecycle, Model, Mount, Recovery, Strategy


def _argv(items: list) -> tuple[str, ...]:
    return tuple(str(x) for x in items)


def _hooks(items: list | None) -> tuple[tuple[str, ...], ...]:
    return tuple(_argv(h["command"]) for h in items or [])


def _frequency(text: str | None) -> Frequency | None:
    return Frequency(*parse_frequency(text)) if text else None


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def build(data: dict, file: str) -> JobSpec:
    """A JobSpec from a document that passed schema and semantic validation."""
    job = data["job"]
    compute = data.get("compute") or {}
    res = compute.get("resources") or {}
    gpu = res.get("gpu")
    cpu = res.get("cpu") or {}
    mem = res.get("memory") or {}
    env = data.get("environment") or {}
    build_ = env.get("build") or {}
    strat = data.get("strategy") or {}
    storage = data.get("storage") or {}
    life = data["lifecycle"]
    model = data.get("model")
    rec = data.get("recovery") or {}
    return JobSpec(
        name=job["name"],
        priority=job.get("priority", "normal"),
        queue=job.get("queue"),
        labels=tuple(sorted((k, _text(v)) for k, v in (job.get("labels") or {}).items())),
        compute=Compute(
            gpu=Gpu(gpu.get("type"), gpu["count"], gpu.get("per_node")) if gpu else None,
            cpu_per_gpu=cpu.get("per_gpu"),
            cpu_count=cpu.get("count"),
            memory_per_gpu=parse_bytes(mem["per_gpu"]) if "per_gpu" in mem else None,
            memory_total=parse_bytes(mem["total"]) if "total" in mem else None,
            topology=compute.get("topology", "any"),
            time_limit_s=parse_duration(compute["time_limit"]) if "time_limit" in compute else None,
            capacity=compute.get("capacity", "on-demand"),
            target=compute.get("target"),
        ),
        environment=Environment(
            image=env.get("image"),
            pip_packages=tuple(build_.get("pip_packages") or ()),
            system_packages=tuple(build_.get("system_packages") or ()),
            env_vars=tuple((k, _text(v)) for k, v in (env.get("env_vars") or {}).items()),
            secrets=tuple(env.get("secrets") or ()),
        ),
        strategy=Strategy(
            framework=strat.get("framework", "pytorch"),
            parallelism=strat.get("parallelism", "auto"),
            config=tuple(sorted((strat.get("config") or {}).items())),
            launcher=strat.get("launcher"),
            launcher_args=tuple(strat.get("launcher_args") or ()),
        ),
        inputs=tuple(Mount(i["name"], i["path"], i.get("mount_path")) for i in storage.get("inputs") or ()),
        outputs=tuple(Mount(o["name"], o["path"], o.get("mount_path"),
                            _frequency((o.get("policy") or {}).get("save_frequency")),
                            (o.get("policy") or {}).get("keep_latest"))
                      for o in storage.get("outputs") or ()),
        lifecycle=Lifecycle(_argv(life["command"]), _hooks(life.get("pre_run")),
                            _hooks(life.get("post_success")), _hooks(life.get("post_failure"))),
        model=Model(parse_parameters(model["parameters"]) if "parameters" in model else None, model.get("config"),
                    model.get("sequence_length"), model.get("micro_batch_size")) if model else None,
        recovery=Recovery(rec.get("max_restarts", 0), tuple(rec.get("restart_on_exit_codes") or ())),
        file=file,
        document=data,
    )
