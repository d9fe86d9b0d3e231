"""The instance catalog's types, and offers built from it for a cloud provider (pure functions).

Loading and checking catalog files is the plan stage's business (`jsctl.plan.catalog`); the catalog
reaches every provider's `offers(cluster, facts, catalog)` as input. A cloud provider turns its
clusters into one Offer per instance type of its cloud (or per type in the cluster's
`instance_types` allow-list) with `instance_offers(cluster, catalog, cloud)`. Cloud capacity is
elastic, so `max_nodes` is None. Every offer has on-demand capacity; it also has spot capacity when
the cluster says `spot: true` and the catalog knows a spot price for that type.

Settings read from the cluster (jsctl.yaml):
    region: us-east-1            # shown with the offer; prices are the catalog's reference region
    instance_types: [p4de.24xlarge, p5.48xlarge]
    spot: true
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from jsctl.model.cluster import Cluster, Offer

GIB = 2**30


@dataclass(frozen=True)
class InstanceType:
    cloud: str  # aws | gcp | azure
    name: str
    gpu_type: str | None  # catalog GPU name (gpus.json); None = CPU only
    gpus: int
    vcpus: int
    memory_bytes: int
    interconnect: str | None  # efa, gpudirect-tcpx, infiniband; None = ordinary networking only
    nvlink: bool
    region: str  # the reference region of the prices
    on_demand: float | None  # $/instance-hour
    spot: float | None  # $/instance-hour; None = no spot price known
    date: str | None  # when the prices were read
    source: str  # where they were read
    note: str | None = None
    origin: str = "built-in catalog"

    @property
    def key(self) -> tuple[str, str]:
        return self.cloud, self.name.lower()

    def to_dict(self) -> dict[str, Any]:
        return {"cloud": self.cloud, "name": self.name, "gpu": self.gpu_type, "gpus": self.gpus, "vcpus": self.vcpus,
                "memory_gib": self.memory_bytes / GIB, "interconnect": self.interconnect, "nvlink": self.nvlink,
                "region": self.region, "on_demand": self.on_demand, "spot": self.spot, "date": self.date,
                "source": self.source, "note": self.note, "origin": self.origin}


@dataclass(frozen=True)
class Catalog:
    instances: tuple[InstanceType, ...]
    _index: Mapping[tuple[str, str], InstanceType] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {i.key: i for i in self.instances})

    def get(self, cloud: str, name: str) -> InstanceType | None:
        return self._index.get((cloud, name.lower()))

    def for_cloud(self, cloud: str) -> tuple[InstanceType, ...]:
        return tuple(i for i in self.instances if i.cloud == cloud)

    def names(self, cloud: str) -> list[str]:
        return [i.name for i in self.instances if i.cloud == cloud]


def allowed(cluster: Cluster, catalog: Catalog, cloud: str) -> list[InstanceType]:
    """The cluster's `instance_types` found in the catalog, else every GPU instance type of the cloud."""
    wanted: Sequence[str] | None = cluster.settings.get("instance_types")
    if not wanted:
        return [i for i in catalog.for_cloud(cloud) if i.gpus > 0]
    found = []
    for name in wanted:
        item = catalog.get(cloud, str(name))
        if item is not None:
            found.append(item)
    return found


def instance_offer(cluster: Cluster, item: InstanceType) -> Offer:
    spot_ok = bool(cluster.settings.get("spot")) and item.spot is not None
    region = cluster.settings.get("region") or item.region
    note = None
    if region != item.region:
        note = f"prices are for the catalog's reference region {item.region}"
    return Offer(
        cluster=cluster.name, provider=cluster.provider, pool=item.name, gpu_type=item.gpu_type,
        gpus_per_node=item.gpus, max_nodes=None, cpus_per_node=item.vcpus, memory_per_node=item.memory_bytes,
        interconnect=item.interconnect, nvlink=item.nvlink, max_time_s=None,
        node_hour_price=item.on_demand, spot_node_hour_price=item.spot,
        capacities=("on-demand", "spot") if spot_ok else ("on-demand",), region=region, note=note)


def instance_offers(cluster: Cluster, catalog: Catalog, cloud: str) -> list[Offer]:
    """One Offer per (allowed) instance type of `cloud` (aws, gcp, azure)."""
    return [instance_offer(cluster, item) for item in allowed(cluster, catalog, cloud)]


@dataclass(frozen=True)
class Problem:
    severity: str  # "error" | "warning"
    message: str


def check_cluster(cluster: Cluster, catalog: Catalog, cloud: str) -> list[Problem]:
    """Problems with a cloud cluster's settings, for its provider's `check_cluster`: an unknown
    instance type is an error (it could never be placed), spot asked where none is priced a warning."""
    out = []
    names = catalog.names(cloud)
    for name in cluster.settings.get("instance_types") or ():
        if catalog.get(cloud, str(name)) is None:
            close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            out.append(Problem("error", f"cluster {cluster.name}: instance type '{name}' is not in the {cloud} "
                                        f"catalog{hint}; add it to your catalog file"))
    if cluster.settings.get("spot"):
        unpriced = [o.name for o in allowed(cluster, catalog, cloud) if o.spot is None]
        if unpriced:
            out.append(Problem("warning", f"cluster {cluster.name}: spot: true, but the catalog has no spot price "
                                          f"for {', '.join(unpriced)} (those offer on-demand only; set `spot:` "
                                          "prices in your catalog file)"))
    return out
