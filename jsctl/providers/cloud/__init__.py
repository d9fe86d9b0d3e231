"""What the cloud batch providers (aws-batch, gcp-batch, azure-ml) share: offers and checks from the
instance catalog, the settings every cloud cluster has, and the container entry point that sets up
the launch contract when the job starts.

A cloud container runs `sh -c SCRIPT`: the script exports the launch contract's variables (values
single-quoted; jsctl's run-time `${NAME}` references left to the shell, which is the only expansion
there is), after a provider-specific prologue that derives MASTER_ADDR and NODE_RANK from what the
service sets (AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS, BATCH_HOSTS_FILE, AZ_BATCHAI_...), then
`exec`s the launched command: the launcher is the container's main process and gets its signals.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from jsctl.config.diagnostics import Diagnostic
from jsctl.model.catalog import Catalog, check_cluster, instance_offers
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.providers.base import Provider
from jsctl.render import launch

MASTER_PORT = 29500
# settings every cloud cluster accepts (a provider's schema adds its own): see settings_properties()
COMMON_SETTINGS: dict[str, Any] = {
    "region": {"type": "string", "minLength": 1},
    "instance_types": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True,
                       "description": "allow-list of catalog instance types (default: every GPU type of the cloud)"},
    "spot": {"type": "boolean", "description": "offer spot capacity where the catalog prices it"},
    "endpoint_url": {"type": "string", "minLength": 1,
                     "description": "the service's endpoint (a local emulator, a private endpoint)"},
}


def settings_schema(title: str, properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A cloud cluster's settings schema: COMMON_SETTINGS plus the provider's `properties`."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, "type": "object",
            "additionalProperties": False, "required": list(required),
            "properties": {**COMMON_SETTINGS, **properties}}


class CloudProvider(Provider):
    """Offers and checks from the catalog of `cloud` (aws | gcp | azure); subclasses render and
    provide the client."""

    cloud: str = ""
    code: str = "CLOUD"  # diagnostic code prefix

    def capabilities(self) -> Capabilities:
        return Capabilities(node_logs=True)

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        return instance_offers(cluster, catalog, self.cloud)

    def check_cluster(self, cluster: Cluster, catalog: Catalog) -> list[Diagnostic]:
        return [Diagnostic(p.severity, f"{self.code}01", p.message, "")
                for p in check_cluster(cluster, catalog, self.cloud)]


def entry_script(ctx: JobContext, prologue: Sequence[str], mounts: Mapping[str, str] | None = None,
                 deepspeed_config_path: str | None = None) -> str:
    """The `sh -c` text a cloud container runs: `prologue` (lines the provider writes: they set
    MASTER_ADDR, NODE_RANK and the like from the service's variables), the launch contract's
    environment, then `exec` of the launched command. User values are quoted; `${NAME}` run-time
    references expand in the shell, in order (so a value may name one exported above it)."""
    env = launch.environment(ctx, mounts, deepspeed_config_path)
    env.setdefault("MASTER_PORT", str(MASTER_PORT))
    lines = ["set -e", *prologue]
    lines += [f"export {name}={launch.shell_word(env[name], ctx)}" for name in launch.dependency_order(env, ctx)]
    lines.append("exec " + launch.shell_command(tuple(launch.command(ctx)), ctx))
    return "\n".join(lines) + "\n"
