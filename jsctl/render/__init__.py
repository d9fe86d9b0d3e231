"""One Jinja2 environment for every provider's templates: StrictUndefined, and `shquote` for shell text."""
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
def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jsctl", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shquote"] = shquote
    env.filters["shjoin"] = shjoin
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
