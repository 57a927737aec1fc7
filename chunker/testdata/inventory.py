"""Inventory management for the warehouse service.

Tracks stock levels per SKU and emits reorder events.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from typing import Iterable

log = logging.getLogger(__name__)

DEFAULT_REORDER_LEVEL = 10


class OutOfStock(Exception):
    """Raised when a reservation exceeds the available stock."""


@dataclasses.dataclass
class Item:
    """A stock keeping unit and its quantity."""

    sku: str
    quantity: int = 0
    reorder_level: int = DEFAULT_REORDER_LEVEL

    @property
    def needs_reorder(self) -> bool:
        """True when the quantity fell to the reorder level."""
        return self.quantity <= self.reorder_level


class Inventory:
    """In-memory inventory keyed by SKU.

    Not thread safe; wrap calls in a lock when sharing it.
    """

    def __init__(self, items: Iterable[Item] = ()):
        self._items = {item.sku: item for item in items}
        self._reserved = defaultdict(int)

    def add(self, sku: str, quantity: int) -> Item:
        """Add quantity units of sku, creating the item if needed."""
        if quantity <= 0:
            raise ValueError(f"quantity must be positive, got {quantity}")
        item = self._items.setdefault(sku, Item(sku))
        item.quantity += quantity
        log.debug("added %d of %s", quantity, sku)
        return item

    def reserve(self, sku: str, quantity: int) -> None:
        """Reserve units for an order.

        Raises OutOfStock when not enough units are free.
        """
        item = self._items.get(sku)
        free = (item.quantity if item else 0) - self._reserved[sku]
        if quantity > free:
            raise OutOfStock(f"{sku}: want {quantity}, have {free}")
        self._reserved[sku] += quantity

    def release(self, sku: str, quantity: int) -> None:
        # Releasing more than reserved is a caller bug; clamp and warn.
        if quantity > self._reserved[sku]:
            log.warning("release of %d %s exceeds reservation", quantity, sku)
            quantity = self._reserved[sku]
        self._reserved[sku] -= quantity

    def reorder_list(self) -> list[str]:
        """SKUs whose stock needs replenishing, sorted."""
        return sorted(sku for sku, item in self._items.items() if item.needs_reorder)


def load(rows: Iterable[dict]) -> Inventory:
    """Build an inventory from CSV-like rows with sku and quantity keys."""
    items = []
    for row in rows:
        items.append(Item(row["sku"], int(row.get("quantity", 0))))
    return Inventory(items)


if __name__ == "__main__":
    inv = load([{"sku": "A-1", "quantity": "3"}])
    print(inv.reorder_list())
