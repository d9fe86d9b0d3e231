"""The base of jsctl's enums of words (Phase, Action)."""
from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """An enum whose members are plain strings to everyone else: equal to their value, printed as it
    (text, f-strings, JSON), and found as a key of a dict keyed by the plain word."""

    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__
