"""Kubernetes resource quantities (``500m``, ``1Gi``, ``2``, ``1e3``): parse, add, render.

Enough of ``k8s.io/apimachinery`` ``resource.Quantity`` for the PodGroup's ``minResources``
sums (spec 8.2): a sum keeps the format of the first quantity added for that resource (binary
``Ki``..``Ei`` or decimal), and renders canonically as Kubernetes does: the largest suffix that
keeps the number whole (``1536Mi``, ``2k``), otherwise milli/micro/nano units (``1500m``),
rounded up to nano units. Unparsable values count as zero (validation rejects them upstream).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -3, "u": -2, "m": -1, "": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|([a-zA-Z]*))$")


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact amount and whether it was written with a binary suffix."""

    amount: Decimal
    binary: bool = False

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.amount + other.amount, self.binary)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.amount * factor, self.binary)


def parse(value: object) -> Quantity:
    """The quantity a string (or number) spells; zero when it is not a quantity."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return Quantity(Decimal(0))
    number, exponent, suffix = match.group(1), match.group(2), match.group(3) or ""
    try:
        amount = Decimal(number)
    except ArithmeticError:
        return Quantity(Decimal(0))
    if exponent:
        return Quantity(amount * Decimal(10) ** int(exponent[1:]))
    if suffix in _BINARY:
        return Quantity(amount * Decimal(1024) ** _BINARY[suffix], binary=True)
    if suffix in _DECIMAL:
        return Quantity(amount * Decimal(1000) ** _DECIMAL[suffix])
    return Quantity(Decimal(0))


def _whole(amount: Decimal) -> bool:
    return amount == amount.to_integral_value()


def render(quantity: Quantity) -> str:
    """The canonical string of ``quantity`` (see the module docstring)."""
    amount = quantity.amount
    if quantity.binary and _whole(amount) and amount != 0:
        for suffix, power in sorted(_BINARY.items(), key=lambda item: -item[1]):
            if _whole(amount / Decimal(1024) ** power):
                return f"{int(amount / Decimal(1024) ** power)}{suffix}"
    nanos = (amount * Decimal(10) ** 9).to_integral_value(rounding=ROUND_CEILING)
    if nanos == 0:
        return "0"
    for suffix, power in sorted(_DECIMAL.items(), key=lambda item: -item[1]):
        scaled = nanos / Decimal(1000) ** (power + 3)
        if _whole(scaled):
            return f"{int(scaled)}{suffix}"
    return str(amount)  # unreachable: nano units are always whole
