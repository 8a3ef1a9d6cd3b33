"""A process-wide memo of per-conversation work, by content, bounded by the text it was computed from.

The steps of one partition (`candidate_schemas`, `validated_rows`, `pseudo_documents`, `dialogue_graphs`)
read the same conversations in one process under the in-process executor, each with its own backend; a
memo per backend, or one bounded by a count smaller than the partition, would repeat the detectors for
every conversation in every step. The segmentation's preparation of a conversation (its analysis and
more) took about 25 bytes per character of its text (measured on generated and forum conversations):
10 million characters are at most about 250 MB per memo, a partition of 5,000 (the default batch size)
conversations of 2,000 characters."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

Value = TypeVar("Value")


def content_key(*parts: str) -> str:
    """A memo key for these strings in this order (each length-prefixed, so no two splits collide)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


class TextBoundedMemo(Generic[Value]):
    """Values by key, least recently used out first, while the characters they stand for exceed
    ``max_chars`` (the last one always stays)."""

    def __init__(self, max_chars: int = 10_000_000):
        self.max_chars = max_chars
        self._items: "OrderedDict[str, tuple[Value, int]]" = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Value | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: str, value: Value, chars: int) -> Value:
        """Keep ``value`` unless the key is there already; returns the kept one (the first wins, so
        threads that computed the same key at once end up sharing one value)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            self._items[key] = (value, chars)
            self._chars += chars
            while self._chars > self.max_chars and len(self._items) > 1:
                self._chars -= self._items.popitem(last=False)[1][1]
            return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def chars(self) -> int:
        return self._chars
