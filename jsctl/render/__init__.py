"""One Jinja2 environment setup for every provider's templates: StrictUndefined, and `shquote` for shell text.

Templates ship with the provider that renders them, in a `templates/` folder of its package:
`render("jsctl.providers.slurm", "sbatch.sh.j2", **context)`; an out-of-tree provider passes its own
package and gets the same environment.
"""
from __future__ import annotations

import functools
import shlex
from typing import Any, Iterable


def shquote(value: Any) -> str:
    """Quote one value for POSIX shells: whatever it holds arrives as one word, unchanged, run never."""
    return shlex.quote(str(value))


def shjoin(argv: Iterable[Any]) -> str:
    return " ".join(shquote(a) for a in argv)


@functools.lru_cache(maxsize=None)
def environment(package: str) -> Any:
    """The environment for the templates in `package`'s `templates/` folder."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shquote"] = shquote
    env.filters["shjoin"] = shjoin
    return env


@functools.lru_cache(maxsize=None)
def _template(package: str, template: str) -> tuple[Any, dict[str, Any]]:
    """Loaded and compiled once per process (get_template would look at the file on every call),
    with its globals, merged once (Template.render merges them into every render's context)."""
    found = environment(package).get_template(template)
    return found, dict(found.globals)


def render(package: str, template: str, **context: Any) -> str:
    """`template` from `package`'s templates (a provider passes its own package, e.g. `__package__`)."""
    found, globals_ = _template(package, template)
    # = found.render(**context), whose context is the template's globals updated with `context`
    try:
        return found.environment.concat(found.root_render_func(found.new_context({**globals_, **context}, shared=True)))
    except Exception:
        found.environment.handle_exception()  # as Template.render: raises, pointing into the template
