"""Key management bounded by the caller's own permissions: a restricted key can neither
create, roll nor revoke a key with more permissions than its own (403 ``permission_denied``
naming what it lacks), over the API and in the dashboard, and the key it aimed at keeps
working."""

from __future__ import annotations

from typing import Any

import pytest

from svc.context import Context
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard
from tests.integration.test_api_keys import as_key, make_key, new_key_client

# A minute's cache of resolved keys: a key refused by mistake would show within it.
pytestmark = pytest.mark.settings(api_key_cache_ttl=60.0, dashboard_secure_cookies=False)


async def _works(api: Api, key: dict[str, Any]) -> bool:
    return (await as_key(api, key["secret"]).call("GET", "/v1/api_keys"))[0] == 200


async def test_a_restricted_key_cannot_revoke_a_full_key(api: Api) -> None:
    full = await make_key(api, permissions=None)
    manager = await new_key_client(api, permissions=["api_keys:write"])
    status, refused = await manager.call("DELETE", f"/v1/api_keys/{full['id']}")
    assert status == 403 and refused["code"] == "permission_denied"
    assert refused["permission"] == "full_access"
    assert await _works(api, full)
    status, read = await api.call("GET", f"/v1/api_keys/{full['id']}")
    assert status == 200 and read["revoked_at"] is None
    status, own = await api.call("GET", "/v1/api_keys")
    assert status == 200  # the organisation's own full key too
    assert all(key["revoked_at"] is None for key in own["data"])


async def test_a_restricted_key_cannot_revoke_a_wider_restricted_key(api: Api) -> None:
    wider = await make_key(api, permissions=["api_keys:read", "events:write"])
    manager = await new_key_client(api, permissions=["api_keys:write", "events:read"])
    status, refused = await manager.call("DELETE", f"/v1/api_keys/{wider['id']}")
    assert status == 403 and refused["permission"] == "events:write"
    assert await _works(api, wider)


async def test_a_restricted_key_revokes_keys_within_its_own(api: Api) -> None:
    narrower = await make_key(api, permissions=["events:read"])
    made = await make_key(api, permissions=["api_keys:write", "events:write"])
    manager = as_key(api, made["secret"])
    status, revoked = await manager.call("DELETE", f"/v1/api_keys/{narrower['id']}")
    assert status == 200 and revoked["revoked_at"] is not None
    status, revoked = await manager.call("DELETE", f"/v1/api_keys/{made['id']}")
    assert status == 200 and revoked["revoked_at"] is not None  # itself


async def test_a_restricted_key_cannot_roll_or_create_a_full_key(api: Api) -> None:
    full = await make_key(api, permissions=None)
    manager = await new_key_client(api, permissions=["api_keys:write"])
    status, refused = await manager.call("POST", f"/v1/api_keys/{full['id']}/roll")
    assert status == 403 and refused["permission"] == "full_access"
    status, refused = await manager.call("POST", "/v1/api_keys", json={"permissions": None})
    assert status == 403 and refused["permission"] == "full_access"
    status, refused = await manager.call("POST", "/v1/api_keys", json={})
    assert status == 403 and refused["permission"] == "full_access"
    assert await _works(api, full)


async def test_a_dashboard_session_is_bounded_by_its_keys_permissions(
    api: Api, ctx: Context, service: Running
) -> None:
    """A session acts for the key it signed in with: once that key is narrowed, it can no
    longer create, roll or revoke keys wider than the key now is."""
    made = await make_key(api, permissions=None)
    full = await make_key(api, permissions=None)
    dashboard = Dashboard(service.base_url)
    try:
        assert (await dashboard.sign_in(made["secret"])).status == 303
        narrowed = ["api_keys:write", "events:read"]
        await ctx.db.execute(
            "UPDATE api_keys SET permissions = $2 WHERE id = $1", made["id"], narrowed
        )
        confirm = await dashboard.get(f"/dashboard/api_keys/{full['id']}/revoke")
        page = await dashboard.post(
            f"/dashboard/api_keys/{full['id']}/revoke", {"csrf_token": confirm.token}
        )
        assert page.status == 403 and "full_access" in page.text
        form = await dashboard.get(f"/dashboard/api_keys/{full['id']}/roll")
        page = await dashboard.post(
            f"/dashboard/api_keys/{full['id']}/roll",
            {"expire_previous_in": "0", "csrf_token": form.token},
        )
        assert page.status == 403 and "full_access" in page.text
        form = await dashboard.get("/dashboard/api_keys/new")
        page = await dashboard.post(
            "/dashboard/api_keys",
            {"name": "wide", "access": "full", "expires_at": "", "csrf_token": form.token},
        )
        assert page.status == 403 and "full_access" in page.text
        assert await _works(api, full)
        status, read = await api.call("GET", f"/v1/api_keys/{full['id']}")
        assert status == 200 and read["revoked_at"] is None and read["prefix"] == full["prefix"]
        status, listed = await api.call("GET", "/v1/api_keys")
        assert len(listed["data"]) == 3  # nothing made

        form = await dashboard.get("/dashboard/api_keys/new")
        page = await dashboard.post(
            "/dashboard/api_keys",
            [
                ("name", "reader"),
                ("access", "restricted"),
                ("permissions", "events:read"),
                ("expires_at", ""),
                ("csrf_token", form.token),
            ],
        )
        assert page.status == 201  # within its own: still made
    finally:
        await dashboard.session.close()
