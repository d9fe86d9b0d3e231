"""Commands that work on files alone: validate, fmt, graph."""
from __future__ import annotations

import json
import sys

import click

from jsctl import JSON_FORMAT_VERSION
from jsctl.cli.common import FilesCommand, files_option, input_files, recursive_option
from jsctl.errors import ConfigError

var_option = click.option("-v", "--var", "cli_vars", multiple=True, metavar="NAME=VALUE",
                          help="Set a variable (repeatable); wins over --var-file and JSCTL_VAR_<NAME>.")
var_file_option = click.option("--var-file", "var_files", multiple=True, type=click.Path(dir_okay=False),
                               help="YAML mapping of variables (repeatable).")


def variables_or_raise(cli_vars, var_files):
    """-v, --var-file and JSCTL_VAR_*; a bad var file raises ConfigError quoting its line."""
    from jsctl import api

    variables, diags = api.variables(cli_vars, var_files)
    if diags:
        exc = ConfigError(diags)
        exc.sources = _texts(var_files)  # quote the var file's line under the message
        raise exc
    return variables


def _texts(paths) -> dict[str, str]:
    texts = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                texts[path] = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def load_validated(paths: tuple[str, ...], cli_vars: tuple[str, ...], var_files: tuple[str, ...],
                   as_json: bool = False):
    """Validate or raise ConfigError carrying every diagnostic (and the sources to quote)."""
    from jsctl import api

    variables = variables_or_raise(cli_vars, var_files)
    result = api.validate(list(paths), variables)
    if not result.ok:
        exc = ConfigError(result.diagnostics)
        exc.sources = result.sources.texts()
        raise exc
    warnings = [d for d in result.diagnostics if d.severity in ("warning", "note")]
    if warnings and not as_json:
        from jsctl.config.diagnostics import format_text

        click.echo(format_text(warnings, result.sources.texts()), err=True)
    return result


@click.command(cls=FilesCommand)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@files_option
@recursive_option
@var_option
@var_file_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: diagnostics as JSON for CI annotations.")
@click.pass_context
def validate(ctx: click.Context, paths: tuple[str, ...], files: tuple[str, ...], cli_vars: tuple[str, ...],
             var_files: tuple[str, ...], fmt: str) -> None:
    """Check job and workflow files, or the directories holding them (a workflow checks every job it
    names; a job file that uses {{jobs.X.outputs.Y}} is checked as a template unless its workflow is given).

    Example: jsctl validate examples/   (or examples/*.yaml, or -f examples/)
    """
    ctx.obj["json_errors"] = fmt == "json"
    if not paths and not files:
        from jsctl.errors import UsageError

        raise UsageError("validate needs at least one PATH (a file or a directory)")
    result = load_validated(tuple(input_files(paths + files)), cli_vars, var_files, as_json=fmt == "json")
    if fmt == "json":
        from jsctl.config.diagnostics import format_json

        click.echo(format_json(result.diagnostics))
        return
    jobs, workflows = len(result.specs), len(result.sources.workflows)
    click.echo(f"Success! {len(result.sources.documents)} file{'s' if len(result.sources.documents) != 1 else ''} "
               f"valid: {jobs} job{'s' if jobs != 1 else ''}"
               + (f" in {workflows} workflow{'s' if workflows != 1 else ''}" if workflows else "") + ".")


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--check", is_flag=True, help="Change nothing; exit 1 and name the files that would change.")
@click.option("--diff", "show_diff", is_flag=True, help="Show what would change.")
def fmt(files: tuple[str, ...], check: bool, show_diff: bool) -> None:
    """Rewrite files in canonical key order and indentation, keeping comments.

    Example: jsctl fmt --check examples/*.yaml
    """
    from jsctl.config import fmt as formatter
    from jsctl.config.loader import load_text, read_text

    changed, problems = [], []
    for path in files:
        text, diags = read_text(path)
        if text is not None:
            _, diags = load_text(path, text)
        if diags:
            problems.extend(diags)
            continue
        new = formatter.format_text(text)
        if new == text:
            continue
        changed.append(path)
        if show_diff:
            import difflib

            click.echo("".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), path, path)))
        if not check:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
    for path in changed:
        click.echo(("would reformat " if check else "reformatted ") + path)
    if problems:
        raise ConfigError(problems)
    if check and changed:
        sys.exit(1)
    if not changed:
        click.echo(f"{len(files)} file{'s' if len(files) != 1 else ''} already formatted.")


@click.command(cls=FilesCommand)
@files_option
@recursive_option
@var_option
@var_file_option
@click.option("--format", "fmt", type=click.Choice(["text", "dot", "json"]), default="text", show_default=True)
def graph(files: tuple[str, ...], cli_vars: tuple[str, ...], var_files: tuple[str, ...], fmt: str) -> None:
    """Show a workflow's DAG in topological layers, with references resolved.

    Example: jsctl graph -f examples/pipeline.yaml --format dot | dot -Tpng > dag.png
    """
    from jsctl.plan import dag

    if not files:
        from jsctl.errors import UsageError

        raise UsageError("graph needs at least one -f FILE (a workflow, or a directory holding one)")
    result = load_validated(tuple(input_files(files)), cli_vars, var_files)
    sources = result.sources
    edges = sources.edges()
    layers = dag.layers(edges)
    by_addr = sources.by_address()
    resolved: dict[str, list[dict]] = {}
    for address, source in by_addr.items():
        refs = []
        for ref in source.references:
            spec = result.specs.get(f"workflow.{source.workflow}.job.{ref.job}")
            target = next((o.path for o in spec.outputs if o.name == ref.output), None) if spec else None
            refs.append({"reference": f"jobs.{ref.job}.outputs.{ref.output}",
                         "at": ".".join(map(str, ref.path)), "resolved": target})
        resolved[address] = refs
    names = {a: s.name for a, s in by_addr.items()}
    from jsctl.model.address import job_id

    ids = {a: job_id(s.name, a, 1) for a, s in by_addr.items()}
    if fmt == "json":
        click.echo(json.dumps({
            "format_version": JSON_FORMAT_VERSION,
            "workflows": sources.workflows,
            "layers": layers,
            "jobs": {a: {"name": names[a], "job_id": ids[a], "depends_on": list(edges[a]),
                         "references": resolved[a]} for a in edges},
        }, indent=2))
        return
    if fmt == "dot":
        click.echo("digraph jsctl {\n  rankdir=LR;\n  node [shape=box];")
        for a in edges:
            click.echo(f'  "{a}" [label="{names[a]}\\n{ids[a]}"];')
        for a, deps in edges.items():
            for d in deps:
                label = ", ".join(r["reference"].split(".", 3)[-1] for r in resolved[a]
                                  if r["reference"].startswith(f"jobs.{names[d]}."))
                click.echo(f'  "{d}" -> "{a}"' + (f' [label="{label}"]' if label else "") + ";")
        click.echo("}")
        return
    for wf, path in sources.workflows.items():
        click.echo(f"workflow {wf} ({path})")
    for n, layer in enumerate(layers, 1):
        for i, a in enumerate(layer):
            head = f"  layer {n}: " if i == 0 else " " * (len(f"  layer {n}: "))
            deps = ", ".join(names[d] for d in edges[a])
            click.echo(f"{head}{names[a]:<16} {ids[a]:<24}" + (f" after {deps}" if deps else ""))
            for r in resolved[a]:
                click.echo(" " * len(head) + f"  {r['at']} = {r['resolved']}  ({{{{{r['reference']}}}}})")


COMMANDS = (validate, fmt, graph)
