"""MkDocs hooks: pages that show files of the repository, and the API reference in the site.

A line ``--8<-- "PATH"`` on a page stands for the Markdown file PATH of the repository (the
README, benchmarks/README.md, chaos/README.md, the chart's README), so each of them stays the
one place of what it says. Its headings go one level down when the page has a title of its
own. Its relative links are written for the page: a link to a page of the site leads there, a
link to another file (a chart, a results file) copies that file into the site, and a link to
a Markdown file the site does not show fails the strict build.

The site's ``reference/`` holds the API reference page as the API serves it at ``/docs``,
with the same Swagger UI files and the OpenAPI document the API serves.

After the build, every relative ``src`` and ``href`` of the site's pages must lead to a file
of the site: raw HTML (an ``<img>`` of a screenshot) is not rewritten by MkDocs the way
Markdown links are, so a path that reads right in the repository can miss on the site.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.repository")

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^--8<-- "([^"]+)"[ \t]*$', re.M)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
LINK = re.compile(r"(\]\(\s*<?)([^()\s<>]+)(>?(?:\s+\"[^\"]*\")?\s*\))")
HTML_LINK = re.compile(r"""(<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["'])([^"']+)(["'])""", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
REFERENCE = "reference/index.html"
"""The API reference page in the site (tests/deploy/test_docs_links.py knows it is built)."""

_pages: dict[str, str] = {}
"""Repository path of an included file → the page (path under docs/) that shows it."""
_copied: set[str] = set()
"""Repository paths of the files the included pages link to, copied into the site."""


def on_files(files: Files, config: Any) -> Files:
    _pages.clear()
    _copied.clear()
    for file in files.documentation_pages():
        for included in INCLUDE.findall((ROOT / "docs" / file.src_uri).read_text()):
            _pages[included] = file.src_uri
    sources = [*_pages, *("docs/" + file.src_uri for file in files.documentation_pages())]
    for source in sources:
        for target in _relative_links((ROOT / source).read_text()):
            path = _resolve(source, target)
            if path and (ROOT / path).is_file() and not path.endswith(".md"):
                _copied.add(path)
    for path in sorted(_copied):
        if not path.startswith("docs/"):
            files.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    for file in _reference(config):
        files.append(file)
    return files


def _reference(config: Any) -> list[File]:
    """The API's reference page as it serves it at ``/docs``, with the same Swagger UI files,
    and the OpenAPI document it serves, under ``reference/``."""
    from api.dashboard import reference
    from api.description import document

    made = [
        File.generated(config, REFERENCE, content=reference.page("static", "openapi.json")),
        File.generated(config, "reference/openapi.json", content=json.dumps(document())),
    ]
    for name, path in reference.FILES.items():
        made.append(File.generated(config, f"reference/static/{name}", abs_src_path=str(path)))
    return made


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    has_title = bool(re.match(r"\s*# ", markdown))
    src_uri = page.file.src_uri

    def include(match: re.Match[str]) -> str:
        included = match.group(1)
        text = _rewrite((ROOT / included).read_text(), included, src_uri)
        return _demote(text) if has_title else text

    # The page's own links to a file another page shows lead to that page.
    return INCLUDE.sub(include, _rewrite(markdown, "docs/" + src_uri, src_uri))


def _prose_lines(text: str) -> list[tuple[bool, str]]:
    """Each line with whether it is outside fenced code."""
    lines: list[tuple[bool, str]] = []
    fence = ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            lines.append((False, line))
        elif match:
            fence = match.group(1)
            lines.append((False, line))
        else:
            lines.append((True, line))
    return lines


def _relative_links(text: str) -> list[str]:
    found: list[str] = []
    for prose, line in _prose_lines(text):
        if prose:
            found += [m.group(2) for m in LINK.finditer(line)]
            found += [m.group(2) for m in HTML_LINK.finditer(line)]
    return [target for target in found if not SCHEME.match(target)]


def _resolve(included: str, target: str) -> str | None:
    """The repository path a relative link of ``included`` leads to (None: within the file)."""
    path = target.partition("#")[0]
    if not path:
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(included), path))


def _url(src_uri: str) -> str:
    """Where the site serves the file ``src_uri`` (under docs/): a page at its directory URL
    (``api/keys.md`` at ``api/keys/``, ``api/index.md`` at ``api/``), any other file as is."""
    if not src_uri.endswith(".md"):
        return src_uri
    stem = src_uri.removesuffix(".md")
    return stem.removesuffix("index") if stem.split("/")[-1] == "index" else stem + "/"


def _rewrite(text: str, included: str, page: str) -> str:
    """``text`` of the file ``included`` with its relative links written for ``page``: a
    Markdown link relative to the page's file (MkDocs then writes it for the page's URL), a
    raw HTML one relative to the page's URL, which MkDocs leaves as it is."""

    def html(match: re.Match[str]) -> str:
        return link(match, _url(page).rstrip("/"), True)

    def link(match: re.Match[str], base: str | None = None, in_html: bool = False) -> str:
        target = match.group(2)
        if SCHEME.match(target) or target.startswith("#"):
            return match.group(0)
        path = _resolve(included, target)
        assert path is not None
        fragment = target.partition("#")[2]
        if path.startswith("docs/"):
            in_site = path.removeprefix("docs/")
        elif path in _pages:
            in_site = _pages[path]
        elif path in _copied:
            in_site = path
        else:
            log.warning("%s: %s links to %s, which the site does not show", page, included, path)
            return match.group(0)
        if in_html:
            in_site = _url(in_site)
        start = (base if in_html else posixpath.dirname(page)) or "."
        relative = posixpath.relpath(in_site, start)
        if in_html and in_site.endswith("/"):
            relative += "/"
        return match.group(1) + relative + (f"#{fragment}" if fragment else "") + match.group(3)

    lines = []
    for prose, line in _prose_lines(text):
        if prose:
            line = HTML_LINK.sub(html, LINK.sub(link, line))
        lines.append(line)
    return "\n".join(lines)


def _demote(text: str) -> str:
    """Every heading of ``text`` one level down, outside fenced code."""
    return "\n".join(
        "#" + line if prose and re.match(r"#{1,5} ", line) else line
        for prose, line in _prose_lines(text)
    )


SITE_LINK = re.compile(r"<(?:a|img|link|script)\b[^>]*?\b(?:href|src)\s*=\s*\"([^\"]+)\"", re.I)


def on_post_build(config: Any) -> None:
    site = Path(config["site_dir"])
    for html in sorted(site.rglob("*.html")):
        if html.is_relative_to(site / "reference"):
            continue
        for target in SITE_LINK.findall(html.read_text()):
            path = target.partition("#")[0].partition("?")[0]
            if not path or SCHEME.match(path) or path.startswith("/"):
                continue
            found = (html.parent / path).resolve()
            if not (found.is_file() or (found / "index.html").is_file()):
                log.warning("%s: %s leads to no file of the site", html.relative_to(site), target)
