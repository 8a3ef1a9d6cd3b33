"""Reading JSON whose numbers a record can hold. Python's json module reads NaN and Infinity (not JSON at
all) and 1e999 (as infinity), and raises a bare ValueError for an integer over 4,300 digits, ending the
whole file's parse: here each is noted as a problem of the record that holds it, and the parse goes on."""

from __future__ import annotations

import json
import math
import sys

_MAX_DIGITS = sys.get_int_max_str_digits() or 4300


class NumberReader:
    """A JSON decoder that notes each number it cannot hold (`problems`, cleared by the caller)."""

    def __init__(self):
        self.problems: list[str] = []
        self.decoder = json.JSONDecoder(parse_constant=self._constant, parse_int=self._integer,
                                        parse_float=self._real)

    def loads(self, text: str):
        self.problems.clear()
        return self.decoder.decode(text)

    def reason(self) -> str | None:
        """Why the last value read cannot be landed, or None."""
        if not self.problems:
            return None
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"invalid JSON: {self.problems[0]}{more}"

    def _constant(self, name: str) -> None:
        self.problems.append(f"{name} is not a JSON number")

    def _integer(self, text: str) -> int | None:
        try:
            return int(text)
        except ValueError:  # more digits than Python converts
            self.problems.append(f"an integer of {len(text.lstrip('-')):,} digits is longer than the "
                                 f"{_MAX_DIGITS:,} digits a number may have")
            return None

    def _real(self, text: str) -> float | None:
        value = float(text)
        if math.isinf(value):
            self.problems.append(f"the number {text[:40]} is too large for a 64-bit float")
            return None
        return value
