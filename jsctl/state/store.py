"""The local state backend under its former name (jsctl.state.local.LocalBackend)."""
from jsctl.state.local import LocalBackend as StateStore

__all__ = ["StateStore"]
