"""Input of the notification settings: the list of addresses."""

from __future__ import annotations

from typing import Any

from api.input.fields import check, reject_unknown
from api.problems import FieldError
from svc.notices.model import MAX_EMAILS, valid_email


def emails(body: dict[str, Any]) -> list[str]:
    """``emails``: a list of at most ``MAX_EMAILS`` distinct addresses (required)."""
    errors: list[FieldError] = []
    reject_unknown(body, {"emails"}, errors)
    value = body.get("emails")
    found: list[str] = []
    if "emails" not in body:
        errors.append(FieldError("emails", "required", "A list of addresses ([] for none)."))
    elif not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append(FieldError("emails", "invalid_type", "A list of strings."))
    elif len(value) > MAX_EMAILS:
        errors.append(FieldError("emails", "too_many", f"At most {MAX_EMAILS} addresses."))
    else:
        for i, address in enumerate(value):
            address = address.strip()
            if not valid_email(address):
                errors.append(FieldError(f"emails[{i}]", "invalid_email", "Not an email address."))
            elif address.lower() in (a.lower() for a in found):
                errors.append(FieldError(f"emails[{i}]", "duplicate", "Named twice."))
            else:
                found.append(address)
    check(errors)
    return found
