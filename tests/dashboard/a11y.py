"""An accessibility smoke check of a page's HTML: the document has a language and a title,
every form control and button has an accessible name, every link has text, and headings
start at one ``h1`` and never skip a level."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

CONTROLS = {"input", "select", "textarea"}
UNLABELLED_INPUTS = {"hidden", "submit", "button", "reset", "image"}
VOID = {"input", "br", "hr", "img", "meta", "link", "source", "wbr", "area", "col", "embed"}


@dataclass
class _Named:
    """A button or link and the text inside it."""

    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang = ""
        self.title = ""
        self.headings: list[int] = []
        self.label_for: set[str] = set()
        self.controls: list[tuple[str, dict[str, str], bool]] = []  # tag, attrs, inside label
        self.named: list[_Named] = []
        self._open: list[str] = []
        self._naming: list[_Named] = []  # buttons and links open now
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "html":
            self.lang = values.get("lang", "")
        elif tag == "title":
            self._in_title = True
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.headings.append(int(tag[1]))
        elif tag == "label" and values.get("for"):
            self.label_for.add(values["for"])
        if tag in CONTROLS:
            self.controls.append((tag, values, "label" in self._open))
        if tag in ("button", "a"):
            self.named.append(_Named(tag, values))
            self._naming.append(self.named[-1])
        if tag not in VOID:
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in ("button", "a") and self._naming:
            self._naming.pop()
        while self._open and self._open.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        for named in self._naming:
            named.text.append(data)


def problems(html: str) -> list[str]:
    """What the page gets wrong (an empty list when it passes)."""
    page = _Page()
    page.feed(html)
    found: list[str] = []
    if not page.lang:
        found.append("<html> has no lang")
    if not page.title.strip():
        found.append("no <title>")
    found += _heading_problems(page.headings)
    for tag, attrs, in_label in page.controls:
        if tag == "input" and attrs.get("type", "text") in UNLABELLED_INPUTS:
            continue
        named = attrs.get("aria-label") or attrs.get("aria-labelledby") or in_label
        if not named and attrs.get("id", "") not in page.label_for:
            found.append(f"<{tag} name={attrs.get('name')!r}> has no label")
    for named in page.named:
        if not "".join(named.text).strip() and not named.attrs.get("aria-label"):
            found.append(f"<{named.tag} {named.attrs}> has no text")
    return found


def _heading_problems(levels: list[int]) -> list[str]:
    if not levels:
        return ["no headings"]
    found = []
    if levels[0] != 1:
        found.append(f"the first heading is h{levels[0]}, not h1")
    if levels.count(1) != 1:
        found.append(f"{levels.count(1)} h1 headings")
    for before, after in zip(levels, levels[1:], strict=False):
        if after > before + 1:
            found.append(f"h{before} is followed by h{after}")
    return found
