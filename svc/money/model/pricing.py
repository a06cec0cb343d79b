"""Prices and their arithmetic: fees in whole Rappen, the partner's share, the stated rounding.

A rate is a percentage in basis points (hundredths of a percent: 290 is 2.9 %) plus a fixed
part in Rappen. The percentage part of a fee is rounded half up to a whole Rappen; the fee
is the percentage part plus the fixed part, but never more than the amount, so a payment
never nets below zero (the fixed part gives way). A partner receives 10 % of the percentage
part, rounded down; the platform keeps the rest. A refund gives back the same share of the
fee (and takes back the same share of the commission) as it is of the captured amount,
rounded down cumulatively (``given_back``). Every figure is an integer, so no fraction of a
Rappen is ever created or lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svc.settings import DEFAULT_PRICING

KINDS: tuple[str, ...] = ("online", "phone", "terminal", "chargeback")
"""What is priced: a payment by its channel, and a chargeback."""
PARTNER_SHARE_PERCENT = 10
MAX_BASIS_POINTS = 10_000
_RATE = re.compile(r"(?:([0-9]{1,3}(?:\.[0-9]{1,2})?)%)?(?:\+?([0-9]{1,9}))?")


@dataclass(frozen=True, slots=True)
class Fee:
    """A fee charged on an amount: ``total`` Rappen, of which ``percentage`` is the
    percentage part."""

    total: int
    percentage: int


@dataclass(frozen=True, slots=True)
class Rate:
    """``basis_points`` hundredths of a percent plus ``fixed`` Rappen."""

    basis_points: int
    fixed: int

    def __post_init__(self) -> None:
        if not 0 <= self.basis_points <= MAX_BASIS_POINTS or self.fixed < 0:
            raise ValueError(f"a rate is 0 to 100 % plus a fixed part ≥ 0, not {self}")

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``2.9%+30``, ``1.7%``, ``1500`` (Rappen) or ``0``."""
        match = _RATE.fullmatch(text.strip())
        if not text.strip() or match is None or match.group(0) == "+":
            raise ValueError(f"a rate looks like 2.9%+30, 1.7% or 1500, not {text!r}")
        percent, fixed = match.group(1), match.group(2)
        whole, _, hundredths = (percent or "0").partition(".")
        basis_points = int(whole) * 100 + int(hundredths.ljust(2, "0"))
        return cls(basis_points, int(fixed or 0))

    @property
    def text(self) -> str:
        whole, hundredths = divmod(self.basis_points, 100)
        percent = f"{whole}.{hundredths:02d}".rstrip("0").rstrip(".")
        if not self.basis_points:
            return str(self.fixed)
        return f"{percent}%" + (f"+{self.fixed}" if self.fixed else "")

    def percentage_of(self, amount: int) -> int:
        """The percentage part on ``amount``, rounded half up to a whole Rappen."""
        return (amount * self.basis_points * 2 + MAX_BASIS_POINTS) // (2 * MAX_BASIS_POINTS)

    def fee(self, amount: int) -> Fee:
        """The fee on a payment of ``amount``: never more than the amount itself."""
        percentage = self.percentage_of(amount)
        return Fee(min(amount, percentage + self.fixed), percentage)

    def charge(self, amount: int) -> int:
        """A fee on top of ``amount`` (a chargeback's): not capped by it."""
        return self.percentage_of(amount) + self.fixed


def partner_share(fee: Fee) -> int:
    """The partner's commission on ``fee``: 10 % of its percentage part, rounded down."""
    return fee.percentage * PARTNER_SHARE_PERCENT // 100


def given_back(part: int, captured: int, before: int, after: int) -> int:
    """What of ``part`` (a payment's fee, or the commission on it) a refund gives back when
    the refunded total of a payment of ``captured`` grows from ``before`` to ``after``.

    It is ``part × refunded ÷ captured`` rounded down, taken cumulatively: the refunds of a
    payment together give back exactly ``part`` once it is refunded in full, and never more.
    """
    return part * after // captured - part * before // captured


@dataclass(frozen=True, slots=True)
class Pricing:
    """A rate for every kind in ``KINDS``."""

    rates: tuple[tuple[str, Rate], ...]

    @classmethod
    def parse(cls, text: str, complete: bool = True) -> Pricing:
        """``kind=rate`` items separated by commas; ``complete`` needs every kind."""
        rates: dict[str, Rate] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            kind, sep, rate = item.partition("=")
            kind = kind.strip()
            if not sep or kind not in KINDS:
                raise ValueError(f"items are KIND=RATE with KIND one of {', '.join(KINDS)}")
            if kind in rates:
                raise ValueError(f"{kind} is priced twice")
            rates[kind] = Rate.parse(rate)
        missing = [kind for kind in KINDS if kind not in rates]
        if complete and missing:
            raise ValueError(f"no price for {', '.join(missing)}")
        return cls(tuple((kind, rates[kind]) for kind in KINDS if kind in rates))

    def rate(self, kind: str) -> Rate:
        for name, rate in self.rates:
            if name == kind:
                return rate
        raise KeyError(kind)

    def overridden(self, overrides: dict[str, Rate]) -> Pricing:
        """These prices with ``overrides`` (an organisation's own) in their place."""
        return Pricing(tuple((kind, overrides.get(kind, rate)) for kind, rate in self.rates))

    @property
    def text(self) -> str:
        return ",".join(f"{kind}={rate.text}" for kind, rate in self.rates)


def configured(text: str) -> Pricing:
    """``SVC_PRICING``: the built-in prices with the kinds it names in their place."""
    named = Pricing.parse(text, complete=False)
    return Pricing.parse(DEFAULT_PRICING).overridden(dict(named.rates))
