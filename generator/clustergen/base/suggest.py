"""'did you mean' hints for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to `word` (ignoring case), or None when nothing is close."""
    pool = {choice.lower(): choice for choice in choices}
    matches = difflib.get_close_matches(word.lower(), list(pool), n=1, cutoff=0.6)
    return pool[matches[0]] if matches else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' or '' when nothing is close."""
    match = nearest(word, choices)
    return f" (did you mean '{match}'?)" if match else ""
