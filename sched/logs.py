"""Logging for every kubesalvo program: text or one JSON object per line, klog's verbosity.

``kubesalvo run``, ``extender`` and ``image-reporter`` share it, so it lives apart from the
runtime (the other programs never import the scheduler to get their logs).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(verbosity: int, fmt: str) -> None:
    """Send every logger to stderr as text or JSON; debug detail from -v 4."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # klog's convention: -v 4 and above is debug detail.
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
