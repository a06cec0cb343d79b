"""Links in the Markdown documents lead somewhere, and the documents speak of this repository only.

Every relative link of README.md, docs/ and the other READMEs names a file or directory of the
repository and, with a ``#fragment`` into a Markdown file, a heading of that file (anchors as
GitHub makes them: the heading's text in lower case, punctuation dropped, spaces to ``-``, a
``-1``, ``-2``… suffix on repeats). The docs site (mkdocs.yml) shows every page of docs/ in
its navigation, and every file a page includes exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from tests.deploy.tools import ROOT

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
CODE_SPAN = re.compile(r"`[^`]+`")
LINK = re.compile(r"\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
HTML_ID = re.compile(r"""<[a-z][^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
INLINE_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
TAG = re.compile(r"<[^>]+>")
NOT_IN_ANCHOR = re.compile(r"[^\w\- ]")

OUTSIDE = ("DESIGN.md", "../shared")
"""Names of documents that live outside the repository, which no document may cite."""

SKIPPED_DIRECTORIES = {"node_modules", "build", "dist", "site", "__pycache__"}

GENERATED = frozenset({"docs/reference/index.html"})
"""Files the docs site's build makes (docs/hooks/repository.py), which pages may link to."""
INCLUDE = re.compile(r'^--8<-- "([^"]+)"[ \t]*$', re.M)


def markdown_files(root: Path) -> Iterator[Path]:
    """Every Markdown file of the tree, leaving out hidden directories (.git, .venv, caches)
    and build output."""
    for path in sorted(root.rglob("*.md")):
        parts = path.relative_to(root).parts[:-1]
        if any(
            part.startswith(".") or part in SKIPPED_DIRECTORIES or part.endswith(".egg-info")
            for part in parts
        ):
            continue
        yield path


def documents(root: Path) -> list[Path]:
    """The documents whose links are checked: the README, docs/ and every other README.

    The CHANGELOG is left out: its entries record the project as it was when written."""
    return [path for path in markdown_files(root) if path.name != "CHANGELOG.md"]


def prose(text: str) -> list[str]:
    """The lines of ``text`` outside fenced code blocks."""
    lines: list[str] = []
    fence = ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
        elif match:
            fence = match.group(1)
        else:
            lines.append(line)
    return lines


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, punctuation dropped, spaces
    to hyphens."""
    text = INLINE_LINK.sub(r"\1", heading)
    text = TAG.sub("", text).replace("`", "").replace("*", "")
    return NOT_IN_ANCHOR.sub("", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a Markdown text: its headings' (repeats numbered) and HTML ids."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    lines = prose(text)
    for line in lines:
        match = HEADING.match(line)
        if match:
            base = anchor(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    found.update(HTML_ID.findall("\n".join(lines)))
    return found


def links(text: str) -> list[str]:
    """The link targets of a Markdown text: inline links, images and HTML ``href``/``src``,
    outside code blocks and code spans."""
    body = CODE_SPAN.sub("", "\n".join(prose(text)))
    return LINK.findall(body) + HTML_LINK.findall(body)


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """``file: target (why)`` for every relative link that leads nowhere."""
    problems: list[str] = []
    cache: dict[Path, set[str]] = {}
    for source in files:
        name = source.relative_to(root).as_posix()
        for target in links(source.read_text()):
            if SCHEME.match(target):
                continue  # http:, https:, mailto: and the like leave the repository
            path_part, _, fragment = target.partition("#")
            path_part = unquote(path_part)
            if not path_part:
                destination = source
            elif path_part.startswith("/"):
                destination = (root / path_part.lstrip("/")).resolve()
            else:
                destination = (source.parent / path_part).resolve()
            if not destination.is_relative_to(root.resolve()):
                problems.append(f"{name}: {target} (outside the repository)")
                continue
            generated = destination.relative_to(root.resolve()).as_posix() in GENERATED
            if not destination.exists() and not generated:
                problems.append(f"{name}: {target} (no such file)")
                continue
            if fragment and destination.suffix == ".md":
                if destination not in cache:
                    cache[destination] = anchors(destination.read_text())
                if unquote(fragment) not in cache[destination]:
                    problems.append(f"{name}: {target} (no such heading)")
    return problems


def outside_mentions(root: Path) -> list[str]:
    """``file:line`` of every mention of a document outside the repository."""
    found: list[str] = []
    for path in markdown_files(root):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(name in line for name in OUTSIDE):
                found.append(f"{path.relative_to(root).as_posix()}:{number}")
    return found


def test_the_documents_include_the_readme_and_docs() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in documents(ROOT)}
    assert {"README.md", "docs/architecture.md"} <= names


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    assert broken_links(ROOT, documents(ROOT)) == []


def test_no_document_cites_one_outside_the_repository() -> None:
    assert outside_mentions(ROOT) == []


def test_anchors_are_made_as_github_makes_them() -> None:
    text = (
        "# svc — payments\n"
        "## Departures and decisions\n"
        "### Field codes (`errors[].code`)\n"
        "### The [AMQP](x.md) contract\n"
        "## Metrics\n"
        "## Metrics\n"
        "```sh\n# → not a heading\n```\n"
    )
    assert anchors(text) == {
        "svc--payments",
        "departures-and-decisions",
        "field-codes-errorscode",
        "the-amqp-contract",
        "metrics",
        "metrics-1",
    }


def test_the_checks_notice_a_broken_link_a_missing_heading_and_an_outside_document(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Where data lives\n")
    (tmp_path / "README.md").write_text(
        "# Readme\n\n## Delivery\n\n"
        "[ok](docs/guide.md#where-data-lives), [here](#delivery), [web](https://example.com),\n"
        "[gone](docs/missing.md), [moved](docs/guide.md#data), [stale](#departures),\n"
        "[up](../elsewhere.md), `[code](nowhere.md)`, as DESIGN.md says.\n"
        '<img src="docs/shot.png" alt="">\n'
        "```\n[fenced](nowhere.md)\n```\n"
    )
    assert broken_links(tmp_path, documents(tmp_path)) == [
        "README.md: docs/missing.md (no such file)",
        "README.md: docs/guide.md#data (no such heading)",
        "README.md: #departures (no such heading)",
        "README.md: ../elsewhere.md (outside the repository)",
        "README.md: docs/shot.png (no such file)",
    ]
    assert outside_mentions(tmp_path) == ["README.md:7"]


def nav_pages(nav: list[Any]) -> list[str]:
    """Every page of a MkDocs ``nav``, in order."""
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_site_shows_every_page_of_docs_and_nothing_else() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), "a page twice in the navigation"
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    generated = {name.removeprefix("docs/") for name in GENERATED}
    assert set(listed) - generated == pages


def test_every_included_file_exists() -> None:
    included = [
        (page.relative_to(ROOT).as_posix(), name)
        for page in (ROOT / "docs").rglob("*.md")
        for name in INCLUDE.findall(page.read_text())
    ]
    assert ("docs/index.md", "README.md") in included
    assert [(page, name) for page, name in included if not (ROOT / name).is_file()] == []
