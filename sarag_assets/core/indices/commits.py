"""Lance's optimistic concurrency: an idempotent action that lost a commit race to another writer is run again."""

from __future__ import annotations

import random
import time


def is_conflict(error: BaseException) -> bool:
    # Lance reports a lost optimistic-concurrency race inside a generic RuntimeError, as "Retryable commit
    # conflict ... Please retry" or "Incompatible transaction ... concurrent transaction"; the message is
    # the only handle on it. Only idempotent actions are retried.
    text = str(error).lower()
    return (
        "commit conflict" in text
        or "please retry" in text
        or ("incompatible transaction" in text and "concurrent transaction" in text)
    )


def retrying(action, attempts: int = 6):
    """Run `action`, again after a short random pause when another writer won a commit race."""
    for attempt in range(attempts):
        try:
            return action()
        except RuntimeError as error:
            if attempt == attempts - 1 or not is_conflict(error):
                raise
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    raise AssertionError("unreachable")
