"""Offers for cloud clusters, from the instance catalog (pure functions).

A cluster of provider `aws-batch`, `gcp-batch` or `azure-ml` becomes one Offer per instance type of
its cloud (or per type in its `instance_types` allow-list). Cloud capacity is elastic, so
`max_nodes` is None. Every offer has on-demand capacity; it also has spot capacity when the cluster
says `spot: true` and the catalog knows a spot price for that type.

Settings read from the cluster (jsctl.yaml):
    region: us-east-1            # shown with the offer; prices are the catalog's reference region
    instance_types: [p4de.24xlarge, p5.48xlarge]
    spot: true
"""
from __future__ import annotations

from typing import Iterable, Sequence

from jsctl.config.diagnostics import did_you_mean
from jsctl.plan.catalog import Catalog, InstanceType
from jsctl.model.cluster import Cluster, Offer

CLOUD_PROVIDERS = {"aws-batch": "aws", "gcp-batch": "gcp", "azure-ml": "azure"}


def cloud_of(cluster: Cluster) -> str | None:
    """`aws`, `gcp`, `azure` for a cloud cluster, else None (Slurm, local, Kubernetes ...)."""
    return CLOUD_PROVIDERS.get(cluster.provider)


def _allowed(cluster: Cluster, catalog: Catalog, cloud: str) -> list[InstanceType]:
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


def cloud_offers(cluster: Cluster, catalog: Catalog) -> list[Offer]:
    """One Offer per (allowed) instance type; [] for a cluster that is not a cloud cluster."""
    cloud = cloud_of(cluster)
    if cloud is None:
        return []
    return [instance_offer(cluster, item) for item in _allowed(cluster, catalog, cloud)]


def offers_for(clusters: Iterable[Cluster], catalog: Catalog) -> list[Offer]:
    """Offers of every cloud cluster in an inventory (other clusters are their providers' business)."""
    return [o for c in clusters for o in cloud_offers(c, catalog)]


def check_cluster(cluster: Cluster, catalog: Catalog) -> list[str]:
    """Problems with a cloud cluster's settings: unknown instance types, spot asked where none is priced."""
    cloud = cloud_of(cluster)
    if cloud is None:
        return []
    out = []
    names = catalog.names(cloud)
    for name in cluster.settings.get("instance_types") or ():
        if catalog.get(cloud, str(name)) is None:
            out.append(f"cluster {cluster.name}: instance type '{name}' is not in the {cloud} catalog"
                       f"{did_you_mean(str(name), names)}; add it to your catalog file")
    if cluster.settings.get("spot"):
        unpriced = [o.name for o in _allowed(cluster, catalog, cloud) if o.spot is None]
        if unpriced:
            out.append(f"cluster {cluster.name}: spot: true, but the catalog has no spot price for "
                       f"{', '.join(unpriced)} (those offer on-demand only; set `spot:` prices in your catalog file)")
    return out
