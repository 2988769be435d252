"""The debug port's guard: a random token, made at start, in a file only its owner reads.

The debug pages (``/debug/queue``, ``/debug/explain``, ``/debug/memory``, the web view
under ``/ui/``) list every pending pod of every namespace. Loopback alone keeps other
machines out, not the other users and containers of this host (a node's host-network
pods, a shared login machine). So every request must carry the token: as a bearer token
(``kubesalvo explain`` reads it from the file), or as a cookie that a browser gets by
opening any page once with ``?token=...`` (the answer sets an HttpOnly, SameSite=Strict
cookie and redirects to the same page without the token, so it leaves the address bar and
the history). Whoever can read the file (its owner, root; in a cluster: whoever may
``kubectl exec`` into the pod) can read the pages. Anything else is 401.

The file is written with mode 0600 through a fresh temporary file in the same folder,
then renamed over the path: never written through a link someone else left there.
"""

from __future__ import annotations

import hmac
import os
import secrets
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

__all__ = [
    "COOKIE",
    "default_token_file",
    "new_token",
    "read_token",
    "token_guard",
    "write_token",
]

COOKIE = "kubesalvo-debug-token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def default_token_file(port: int) -> Path:
    """Where ``kubesalvo run --debug-port PORT`` writes its token unless told otherwise
    (``kubesalvo explain`` looks there for the port of its ``--debug-url``): the user's
    runtime folder ($XDG_RUNTIME_DIR), else the temporary folder."""
    folder = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(folder) / f"kubesalvo-debug-{port}.token"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_token(path: Path, token: str) -> None:
    """Writes ``token`` to ``path``, readable by this user only."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".kubesalvo-debug-")  # 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_token(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def _same(offered: str | None, token: str) -> bool:
    return offered is not None and hmac.compare_digest(offered.encode(), token.encode())


def _bearer(request: web.Request) -> str | None:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def token_guard(token: str) -> Any:
    """An aiohttp middleware that lets through only requests that carry ``token``."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if _same(request.query.get("token"), token):
            query = request.rel_url.query.copy()
            del query["token"]
            location = str(request.rel_url.with_query(query))
            answer = web.Response(status=303, headers={"Location": location})
            answer.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
            return answer
        if _same(_bearer(request), token) or _same(request.cookies.get(COOKIE), token):
            return await handler(request)
        return web.json_response(
            {
                "error": "the debug pages need the token of the file kubesalvo run wrote "
                "(--debug-token-file): send it as a bearer token, or open a page once "
                "with ?token=TOKEN"
            },
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="kubesalvo-debug"'},
        )

    return guard
