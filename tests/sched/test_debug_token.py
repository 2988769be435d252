"""The debug port's guard: requests without the token, or with another, are refused; the
token as a bearer or as the cookie a first ``?token=`` visit sets lets a caller in; the
token file is its owner's alone."""

from __future__ import annotations

import os
import stat

import aiohttp
from aiohttp import web

from kubesalvo.sched.debug_token import COOKIE, new_token, read_token, write_token
from kubesalvo.sched.server import DebugServer


async def queue_page(request: web.Request) -> web.Response:
    return web.Response(text="every pending pod")


async def started(token: str) -> DebugServer:
    debug = DebugServer(token, port=0)
    debug.add_page("/debug/queue", queue_page)
    await debug.start()
    return debug


async def test_a_caller_without_the_token_or_with_another_is_refused_with_401():
    debug = await started("right")
    try:
        async with aiohttp.ClientSession() as session:
            for headers in (
                {},
                {"Authorization": "Bearer wrong"},
                {"Authorization": "Basic right"},
            ):
                async with session.get(debug.url + "/debug/queue", headers=headers) as answer:
                    assert answer.status == 401
                    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
                    assert "every pending pod" not in await answer.text()
            async with session.get(debug.url + "/debug/queue?token=wrong") as answer:
                assert answer.status == 401
            async with session.get(debug.url + "/debug/queue", cookies={COOKIE: "wrong"}) as answer:
                assert answer.status == 401
            # A missing page is not told apart from a present one without the token.
            async with session.get(debug.url + "/debug/nothing") as answer:
                assert answer.status == 401
    finally:
        await debug.stop()


async def test_the_token_as_a_bearer_token_lets_the_caller_in():
    debug = await started("right")
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                debug.url + "/debug/queue", headers={"Authorization": "Bearer right"}
            ) as answer,
        ):
            assert (answer.status, await answer.text()) == (200, "every pending pod")
    finally:
        await debug.stop()


async def test_a_first_visit_with_the_token_leaves_a_cookie_and_a_clean_address():
    debug = await started("right")
    try:
        jar = aiohttp.CookieJar(unsafe=True)  # cookies of an IP address (127.0.0.1)
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            async with session.get(
                debug.url + "/debug/queue?token=right&namespace=a", allow_redirects=False
            ) as answer:
                assert answer.status == 303
                assert answer.headers["Location"] == "/debug/queue?namespace=a"
                cookie = answer.cookies[COOKIE]
                assert cookie["httponly"] and cookie["samesite"] == "Strict"
            async with session.get(debug.url + "/debug/queue") as answer:
                assert (answer.status, await answer.text()) == (200, "every pending pod")
    finally:
        await debug.stop()


def test_the_token_file_is_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "debug.token"
    path.write_text("old")
    os.chmod(path, 0o644)
    token = new_token()
    write_token(path, token)
    assert read_token(path) == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["debug.token"]  # no temporary left
