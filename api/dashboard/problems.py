"""The page a Problem's ``type`` leads to: ``GET /problems`` lists every code, and
``GET /problems/<code>`` (a Problem's ``type``, relative to the API) leads to its row.

A page for people, outside the API and its description like the reference at ``/docs``,
mounted by ``api.dashboard.install``. It is written once, from the registry of codes
(``api.codes``), so it names exactly the codes the API answers with.
"""

from __future__ import annotations

from html import escape

from aiohttp import web

from api.codes import ANY_ERROR_STATUS, FIELD_CODES, PROBLEM_CODES
from api.dashboard import rendering
from api.problems import PROBLEM_TYPE_BASE

PATH = PROBLEM_TYPE_BASE.rstrip("/")


def _row(code: str, statuses: str, meaning: str) -> str:
    return (
        f'<tr id="{escape(code)}"><td><code>{escape(code)}</code></td>'
        f"<td>{escape(statuses)}</td><td>{escape(meaning)}</td></tr>"
    )


def _statuses(statuses: frozenset[int]) -> str:
    if statuses == ANY_ERROR_STATUS:
        return "any 4xx or 5xx"
    return ", ".join(str(status) for status in sorted(statuses))


def page() -> str:
    """Every Problem code with its statuses and meaning, and every field-error code."""
    problems = "\n".join(
        _row(code, _statuses(found.statuses), found.meaning)
        for code, found in PROBLEM_CODES.items()
    )
    fields = "\n".join(_row(code, "422", meaning) for code, meaning in FIELD_CODES.items())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Problem types · svc</title>
<link rel="stylesheet" href="/dashboard/static/dashboard.css">
</head>
<body class="signed-out">
<main id="main">
<h1>Problem types</h1>
<p>Every error of the API is an RFC 9457 Problem (<code>application/problem+json</code>) whose
<code>type</code> is <code>{PROBLEM_TYPE_BASE}&lt;code&gt;</code>, which leads here.
<code>code</code> is stable; <code>detail</code> is for people and may change. Input errors
(422 <code>validation_error</code>) list each offending field in <code>errors</code>, with a
field-error code of the second table. The documentation's Errors page says more of each.</p>
<table>
<thead><tr><th>Code</th><th>Status</th><th>Meaning</th></tr></thead>
<tbody>
{problems}
</tbody>
</table>
<h2 id="field-errors">Field-error codes</h2>
<table>
<thead><tr><th>Code</th><th>Status</th><th>Meaning</th></tr></thead>
<tbody>
{fields}
</tbody>
</table>
</main>
</body>
</html>
"""


def routes() -> list[web.RouteDef]:
    """The page, and a redirect from each code's ``type`` to its row."""
    body = page()

    async def listing(request: web.Request) -> web.Response:
        response = web.Response(text=body, content_type="text/html")
        response.headers.update(rendering.SECURITY_HEADERS)
        return response

    async def one(request: web.Request) -> web.Response:
        code = request.match_info["code"]
        if code not in PROBLEM_CODES:
            raise web.HTTPNotFound()
        raise web.HTTPFound(f"{PATH}#{code}")

    return [
        web.get(PATH, listing, allow_head=False),
        web.get(PATH + "/{code}", one, allow_head=False),
    ]
