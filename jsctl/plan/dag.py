"""The dependency graph of the jobs in a plan (networkx, imported only when a graph is needed)."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence


def layers(edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Topological layers: each job after everything it depends on. `edges[job]` = its dependencies."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(edges)
    for job, deps in edges.items():
        graph.add_edges_from((dep, job) for dep in deps)
    return [sorted(layer) for layer in nx.topological_generations(graph)]


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One dependency cycle as a list of jobs (first repeated at the end), or None."""
    if not any(edges.values()):
        return None
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(edges)
    for job, deps in edges.items():
        graph.add_edges_from((dep, job) for dep in deps)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return None
    nodes = [u for u, _ in cycle]
    return nodes + [nodes[0]]


def order(edges: Mapping[str, Sequence[str]]) -> list[str]:
    """A deterministic topological order; without dependencies, sorting alone gives it."""
    if not any(edges.values()):
        return sorted(edges)
    return [job for layer in layers(edges) for job in layer]


def descendants(edges: Mapping[str, Sequence[str]], roots: Iterable[str]) -> set[str]:
    """Every job that depends, directly or not, on one of `roots`."""
    dependents: dict[str, list[str]] = {}
    for job, deps in edges.items():
        for dep in deps:
            dependents.setdefault(dep, []).append(job)
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        for child in dependents.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen
