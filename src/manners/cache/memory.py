"""One process's store: dictionaries, atomic because asyncio runs one task at a time."""

from __future__ import annotations

import time

from .entry import Entry


class MemoryStore:
    location = "memory"

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._locks: dict[str, tuple[str, float]] = {}
        self._slots: dict[str, float] = {}
        self._starts: dict[str, float] = {}

    async def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    async def put(self, key: str, entry: Entry) -> None:
        self._entries[key] = entry

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        now = time.time()
        held = self._locks.get(key)
        if held is not None and held[1] > now:
            return False
        self._locks[key] = (token, now + ttl)
        return True

    async def release(self, key: str, token: str) -> None:
        if self._locks.get(key, ("",))[0] == token:
            del self._locks[key]

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        now = time.time()
        slot = max(now, now + wait, self._slots.get(key, 0.0), self._starts.get(key, -spacing) + spacing)
        self._slots[key] = slot + spacing
        return slot - now

    async def claim(self, key: str, spacing: float) -> float:
        now = time.time()
        left = self._starts.get(key, 0.0) + spacing - now
        if left > 0:
            return left
        self._starts[key] = now
        return 0.0

    async def close(self) -> None:
        pass
