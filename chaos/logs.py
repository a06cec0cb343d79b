"""What the role processes logged during a scenario: their warnings and errors, condensed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

LEVELS = (" WARNING ", " ERROR ", " CRITICAL ")
KEPT = 12
WIDTH = 300


class LogMarks:
    """Remembers where each log ended when made; ``warnings`` reads what came after."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self._paths = paths
        self._offsets = {
            role: path.stat().st_size if path.exists() else 0 for role, path in paths.items()
        }

    def warnings(self) -> dict[str, list[str]]:
        """Role → its distinct warning and error messages since the mark, most frequent first,
        each as ``<count> × <level> <logger> <message>`` (timestamps dropped)."""
        found: dict[str, list[str]] = {}
        for role, path in self._paths.items():
            counts: Counter[str] = Counter()
            with path.open("rb") as log:
                log.seek(self._offsets[role])
                for raw in log:
                    line = raw.decode(errors="replace").rstrip()
                    if any(level in line for level in LEVELS):
                        # "<date> <time> LEVEL logger message": keep from the level on.
                        counts[line.split(" ", 2)[-1][:WIDTH]] += 1
            if counts:
                found[role] = [f"{n} × {text}" for text, n in counts.most_common(KEPT)]
        return found
