"""From files to job sources (workflow expansion, references, DAG), then to resolved JobSpecs.

`load_sources` reads every file once and builds the dependency graph; `resolve_job` turns one
source into a JobSpec for a given generation (which fixes `${JOB_ID}`), with upstream output
paths substituted for `{{jobs.<name>.outputs.<output>}}`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from jsctl.config import schema, semantics
from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, has_errors, note
from jsctl.config.loader import Document, Position, load_text, read_text
from jsctl.config.spec import build
from jsctl.model.spec import JobSpec
from jsctl.config.variables import Variables, column_offset, interpolate
from jsctl.plan import dag
from jsctl.model import gcpause
from jsctl.model.address import job_address, job_id
from jsctl.model.runtime_names import NONE, RuntimeNames

REF = re.compile(r"\{\{\s*jobs\.([^.\s{}]+)\.outputs\.([^.\s{}]+)\s*\}\}")
ANY_REF = re.compile(r"\{\{\s*jobs\b[^{}]*\}\}")  # what looks like a reference, well-formed or not


@dataclass(frozen=True)
class Reference:
    job: str  # upstream job name in the workflow
    output: str
    path: tuple  # where in the referencing document
    index: int = 0  # where in that string value


@dataclass(frozen=True)
class JobSource:
    """One job to plan, before its generation (and so its id) is known."""

    address: str
    name: str
    doc: Document
    variables: Variables
    depends_on: tuple[str, ...]  # addresses, explicit and implied by references
    workflow: str | None = None
    references: tuple[Reference, ...] = ()


@dataclass
class Sources:
    jobs: list[JobSource] = field(default_factory=list)  # in dependency order
    documents: dict[str, Document] = field(default_factory=dict)
    workflows: dict[str, str] = field(default_factory=dict)  # workflow name -> file
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> text, for files that did not load

    def by_address(self) -> dict[str, JobSource]:
        return {j.address: j for j in self.jobs}

    def edges(self) -> dict[str, tuple[str, ...]]:
        return {j.address: j.depends_on for j in self.jobs}

    def texts(self) -> dict[str, str]:
        """Source text by file, under the name diagnostics use (as given) and normalised."""
        out = dict(self.unreadable)
        for p, d in self.documents.items():
            out[p] = out[d.path] = d.text
        return out


def load_sources(paths: Iterable[str], variables: Variables, runtime: RuntimeNames = NONE,
                 templates: bool = False) -> tuple[Sources, list[Diagnostic]]:
    """Load job and workflow files (kind detected from content) into sources in dependency order;
    `runtime`: the names the installed providers set when a job runs. `templates` (validate): a job
    file whose `{{jobs.X.outputs.Y}}` no workflow here resolves is checked as a template (a note, not
    an error); planning needs the workflow."""
    with gcpause.paused():  # thousands of documents: the collector would only walk them
        return _load_sources(paths, variables, runtime, templates)


def _load_sources(paths: Iterable[str], variables: Variables, runtime: RuntimeNames,
                  templates: bool) -> tuple[Sources, list[Diagnostic]]:
    sources = Sources()
    diags: list[Diagnostic] = []
    found: list[JobSource] = []
    docs: list[Document] = []
    for path in paths:
        doc, ds = _load(path, sources)
        diags.extend(ds)
        if doc is not None and not has_errors(ds):
            docs.append(doc)
    for doc in docs:
        if doc.kind == "workflow":
            found.extend(_workflow_sources(doc, variables, sources, diags, runtime))
    claimed = {os.path.realpath(j.doc.path): j.workflow for j in found}
    for doc in docs:
        if doc.kind == "workflow":
            continue
        refs = _references(doc)
        if claimed and os.path.realpath(doc.path) in claimed:  # a job file that a workflow here names is planned as part of it
            if refs and templates:
                workflow = claimed[os.path.realpath(doc.path)]  # one line per file: it is not a problem
                diags.append(note("R000", f"{_shown(refs)} resolved by workflow '{workflow}' "
                                  f"({sources.workflows.get(workflow, '?')})", doc.path))
            continue
        if doc.kind != "job" and "version" not in doc.data:
            diags.append(error("E020", "not a jetstream.v1 job or workflow: expected a top-level 'job' or "
                               "'workflow'", doc.path, 1, 1))
            continue
        diags.extend(_malformed_references(doc))
        if refs:
            p = _ref_position(doc, refs[0])
            hint = _including_hint(doc.path)
            if templates:
                diags.append(note("R001", f"{_shown(refs)} resolves only inside a workflow: checked as a "
                                  "template", doc.path, p.line, p.col, hint=hint))
            else:
                for ref in refs:
                    p = _ref_position(doc, ref)
                    diags.append(error("R001", f"reference to jobs.{ref.job}.outputs.{ref.output} outside a "
                                       "workflow: references resolve only between jobs of one workflow",
                                       doc.path, p.line, p.col, hint=hint))
        name = _job_name(doc, variables, runtime, diags)
        found.append(JobSource(job_address(name), name, doc, variables, (), None, tuple(refs) if templates else ()))
    seen: dict[str, JobSource] = {}
    for job in found:
        if job.address in seen:
            diags.append(error("E021", f"{job.address} is defined twice (also in {seen[job.address].doc.path})",
                               job.doc.path, 1, 1))
        else:
            seen[job.address] = job
    edges = {a: tuple(d for d in j.depends_on if d in seen) for a, j in seen.items()}
    if dag.find_cycle(edges) is None:
        sources.jobs = [seen[a] for a in dag.order(edges)]
    else:
        sources.jobs = list(seen.values())
    return sources, diags


def _load(path: str, sources: Sources) -> tuple[Document | None, list[Diagnostic]]:
    if os.path.normpath(path) in sources.unreadable:
        return None, []  # given and included by a workflow: its problems are reported once
    text, diags = read_text(path)
    if text is None:
        return None, diags
    doc, diags = load_text(path, text)
    if doc is not None:
        sources.documents[os.path.normpath(path)] = doc
    else:  # kept so that its diagnostics quote the source line
        sources.unreadable[path] = sources.unreadable[os.path.normpath(path)] = text
    return doc, diags


def _job_name(doc: Document, variables: Variables, runtime: RuntimeNames, diags: list[Diagnostic]) -> str:
    """`job.name` after variables (the address and id are made from it), else the file's name."""
    job = doc.data.get("job")
    name = job.get("name") if isinstance(job, dict) else None
    if not isinstance(name, str):
        return os.path.splitext(os.path.basename(doc.path))[0]
    if "$" in name:
        value, ds = interpolate(doc, {"job": {"name": name}}, variables, None, runtime=runtime)
        diags.extend(ds)
        name = str(value["job"]["name"])
    return name


def _shown(refs: list[Reference]) -> str:
    names = list(dict.fromkeys(f"{{{{jobs.{r.job}.outputs.{r.output}}}}}" for r in refs))
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _strings(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Every string in a document, with its path of keys and indexes."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, path + (i,))
    elif isinstance(node, str):
        yield path, node


def _may_refer(doc: Document) -> bool:
    """Whether any string of the document may hold `{{`: not when the fast path read it (see
    loader.load_text) and its text has none, nor an escape that could make one; most job files, so
    their values need not be walked. (The round-trip path reads `{ {jobs...} }` as a reference.)"""
    return doc.positioned or "{{" in doc.text or "\\" in doc.text


def _malformed_references(doc: Document) -> list[Diagnostic]:
    """`{{jobs...}}` that is not `{{jobs.<job>.outputs.<output>}}` would reach the job as literal text."""
    found: list[Diagnostic] = []
    if not _may_refer(doc):
        return found
    for path, text in _strings(doc.data):
        for m in ANY_REF.finditer(text) if "{{" in text else ():
            if not REF.fullmatch(m.group(0)):
                p = _ref_position(doc, Reference("", "", path, m.start()))
                found.append(error("R005", f"malformed reference '{m.group(0)}'", doc.path, p.line, p.col,
                                   hint="write {{jobs.<job>.outputs.<output>}}", length=len(m.group(0))))
    return found


def including_workflows(path: str, limit: int = 200) -> list[tuple[str, str]]:
    """(workflow name, file) of the workflows beside `path` whose jobs include it."""
    directory = os.path.dirname(path) or "."
    target = os.path.realpath(path)
    out: list[tuple[str, str]] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return out
    for entry in [n for n in names if n.endswith((".yaml", ".yml"))][:limit]:
        other = os.path.join(directory, entry)
        if os.path.realpath(other) == target:
            continue
        text, _ = read_text(other)
        doc = load_text(other, text)[0] if text is not None and "workflow" in text else None
        wf = doc.data.get("workflow") if doc is not None and doc.kind == "workflow" else None
        jobs = wf.get("jobs") if isinstance(wf, dict) else None
        for entry_ in jobs if isinstance(jobs, list) else ():
            spec = entry_.get("spec") if isinstance(entry_, dict) else None
            if isinstance(spec, str) and os.path.realpath(os.path.join(directory, spec)) == target:
                out.append((str(wf.get("name")), other))
                break
    return out


def _including_hint(path: str) -> str:
    found = including_workflows(path)
    if not found:
        return "give the workflow file that includes this job (with -f, or to validate) to resolve it"
    name, wf_path = found[0]
    return f"workflow '{name}' ({wf_path}) includes this file: give it too (-f {wf_path}) to resolve the reference"


def _references(doc: Document) -> list[Reference]:
    if not _may_refer(doc):
        return []
    return [Reference(m.group(1), m.group(2), path, m.start())
            for path, text in _strings(doc.data) for m in REF.finditer(text)]


def _workflow_sources(doc: Document, variables: Variables, sources: Sources,
                      diags: list[Diagnostic], runtime: RuntimeNames = NONE) -> list[JobSource]:
    data, ds = interpolate(doc, doc.data, variables, None, runtime=runtime)
    diags.extend(ds)
    ds = schema.validate(doc, "workflow", data)
    diags.extend(ds)
    if has_errors(ds):
        return []
    wf = data["workflow"]
    name = wf["name"]
    sources.workflows[name] = doc.path
    entries = wf["jobs"]
    names = [e["name"] for e in entries]
    base = os.path.dirname(doc.path)
    loaded: dict[str, tuple[dict, Document]] = {}
    for i, entry in enumerate(entries):
        path = ("workflow", "jobs", i)
        if names.count(entry["name"]) > 1 and names.index(entry["name"]) != i:
            p = doc.where(path + ("name",))
            diags.append(error("W001", f"job name '{entry['name']}' is used twice in workflow '{name}'",
                               doc.path, p.line, p.col))
            continue
        for j, dep in enumerate(entry.get("dependsOn") or []):
            if dep not in names:
                p = doc.where(path + ("dependsOn", j))
                diags.append(error("W002", f"'{entry['name']}' depends on unknown job '{dep}'"
                                   f"{did_you_mean(dep, names)}", doc.path, p.line, p.col, length=len(dep)))
        spec_path = os.path.normpath(os.path.join(base, entry["spec"]))
        if not os.path.isfile(spec_path):
            p = doc.where(path + ("spec",))
            diags.append(error("W003", f"job file '{entry['spec']}' not found (looked for {spec_path})",
                               doc.path, p.line, p.col, length=len(entry["spec"])))
            continue
        job_doc = sources.documents.get(spec_path)
        if job_doc is None:
            job_doc, ds = _load(spec_path, sources)
            diags.extend(ds)
        if job_doc is not None and isinstance(job_doc.data, dict):
            loaded[entry["name"]] = (entry, job_doc)
    out: list[JobSource] = []
    edges: dict[str, list[str]] = {}
    for jname, (entry, job_doc) in loaded.items():
        deps = [d for d in entry.get("dependsOn") or [] if d in names]
        refs = _references(job_doc)
        diags.extend(_malformed_references(job_doc))
        for ref in refs:
            p = _ref_position(job_doc, ref)
            if ref.job not in names:
                diags.append(error("R002", f"reference to unknown job '{ref.job}'{did_you_mean(ref.job, names)}",
                                   job_doc.path, p.line, p.col))
            elif ref.job == jname:
                diags.append(error("R003", f"job '{jname}' references its own output", job_doc.path, p.line, p.col))
            elif ref.job in loaded:
                outputs = [o.get("name") for o in _outputs(loaded[ref.job][1])]
                if ref.output not in outputs:
                    diags.append(error("R004", f"job '{ref.job}' has no output '{ref.output}'"
                                       f"{did_you_mean(ref.output, outputs)}", job_doc.path, p.line, p.col,
                                       hint=("its outputs: " + ", ".join(map(str, outputs))) if outputs else
                                       f"'{ref.job}' declares no storage.outputs"))
                if ref.job not in deps:
                    deps.append(ref.job)
        edges[jname] = deps
        per_job = entry.get("variables") or {}
        out.append(JobSource(job_address(jname, name), jname, job_doc, variables.with_overrides(per_job),
                             tuple(job_address(d, name) for d in deps), name, tuple(refs)))
    cycle = dag.find_cycle({k: v for k, v in edges.items()})
    if cycle:
        first = names.index(cycle[0])
        p = doc.where(("workflow", "jobs", first, "dependsOn"), key=True)
        diags.append(error("W004", "dependency cycle: " + " -> ".join(cycle), doc.path, p.line, p.col,
                           hint="a workflow must be a DAG; remove one of these dependencies"))
    return out


def _ref_position(doc: Document, ref: Reference) -> Position:
    p = doc.where(ref.path)
    return Position(p.line, p.col + column_offset(doc, p, ref.index))


def _outputs(doc: Document) -> list[dict]:
    storage = doc.data.get("storage") if isinstance(doc.data, dict) else None
    outs = storage.get("outputs") if isinstance(storage, dict) else None
    return [o for o in outs or [] if isinstance(o, dict)]


def resolve_job(source: JobSource, generation: int, upstream: Mapping[str, Mapping[str, str]] | None = None,
                runtime: RuntimeNames = NONE) -> tuple[JobSpec | None, list[Diagnostic]]:
    """The job's spec with variables, `${JOB_ID}` and upstream references resolved, validated;
    `runtime`: the names the installed providers set when a job runs (left for run time)."""
    doc = source.doc
    env = doc.data.get("environment") if isinstance(doc.data.get("environment"), dict) else {}
    leave = frozenset(list((env.get("env_vars") or {}) if isinstance(env.get("env_vars"), dict) else ())
                      + [s for s in env.get("secrets") or [] if isinstance(s, str)])
    the_id = job_id(source.name, source.address, generation)
    data, diags = interpolate(doc, doc.data, source.variables, the_id, leave, runtime)
    if source.workflow and source.references:
        data = _substitute(data, source.workflow, upstream or {})
    found = schema.validate(doc, "job", data)
    diags.extend(found)
    if has_errors(found):
        return None, diags
    diags.extend(semantics.check_job(doc, data))
    if has_errors(diags):
        return None, diags
    return build(data, doc.path), diags


def _substitute(node: Any, workflow: str, upstream: Mapping[str, Mapping[str, str]]) -> Any:
    if isinstance(node, dict):
        return {k: _substitute(v, workflow, upstream) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, workflow, upstream) for v in node]
    if isinstance(node, str) and "{{" in node:
        def sub(m: re.Match) -> str:
            paths = upstream.get(job_address(m.group(1), workflow))
            return paths[m.group(2)] if paths and m.group(2) in paths else m.group(0)
        return REF.sub(sub, node)
    return node


def output_paths(spec: JobSpec) -> dict[str, str]:
    return {o.name: o.path for o in spec.outputs}
