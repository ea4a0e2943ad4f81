"""'did you mean' hints for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' or '' when nothing is close."""
    pool = {choice.lower(): choice for choice in choices}
    matches = difflib.get_close_matches(word.lower(), list(pool), n=1, cutoff=0.6)
    return f" (did you mean '{pool[matches[0]]}'?)" if matches else ""
