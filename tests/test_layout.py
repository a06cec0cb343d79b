"""docs/development.md says where the tests are: its table of test folders names every folder of
``tests/`` that holds tests, and only those."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(tests/[\w/]+)/` \|", re.MULTILINE)


def folders_in_the_table(text: str) -> set[str]:
    return set(ROW.findall(text))


def folders_with_tests(tests: Path) -> set[str]:
    return {
        str(path.parent.relative_to(tests.parent))
        for path in tests.rglob("test_*.py")
        if path.parent != tests
    }


def test_the_table_names_every_folder_of_tests() -> None:
    named = folders_in_the_table((ROOT / "docs" / "development.md").read_text())
    assert named == folders_with_tests(ROOT / "tests")


def test_a_row_is_read_by_its_folder() -> None:
    table = "| Folder | Holds |\n|---|---|\n| `tests/unit/` | logic |\n| `tests/api/` | API |\n"
    assert folders_in_the_table(table) == {"tests/unit", "tests/api"}
    assert folders_in_the_table("see `tests/unit/` for more") == set()
