"""Start-up checks of the settings the money domain reads: prices and the payout schedule."""

from __future__ import annotations

from svc.money.model.pricing import configured
from svc.money.model.schedule import PayoutSchedule
from svc.settings import Settings, SettingsError


def check_settings(settings: Settings) -> None:
    """Raise ``SettingsError`` naming the variable when ``SVC_PRICING`` or
    ``SVC_PAYOUT_SCHEDULE`` cannot be used."""
    for name, parse in (("payout_schedule", PayoutSchedule.parse), ("pricing", configured)):
        try:
            parse(getattr(settings, name))
        except ValueError as exc:
            raise SettingsError(f"SVC_{name.upper()}: {exc}") from None
