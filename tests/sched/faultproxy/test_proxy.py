"""The fault proxy refuses to listen anywhere but loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
import msgspec
import pytest

from kubesalvo.sched.client import ApiError
from kubesalvo.sched.faultproxy.proxy import FaultProxy, ProxyStats, status_body


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "192.168.0.1"])
def test_the_proxy_listens_on_loopback_only(host):
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy("https://127.0.0.1:6443", host=host)


def test_injected_errors_are_api_status_objects():
    status = msgspec.json.decode(status_body(410, "Expired", "too old resource version: 5"))
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"


BINDING = "/api/v1/namespaces/default/pods/p1/binding"
Upstream = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def post_binding(upstream_handler: Upstream) -> tuple[int, bytes, ProxyStats]:
    """POST a binding through a proxy in front of ``upstream_handler`` (a stream server's
    callback standing in for the API server): the answer and the proxy's record."""
    upstream = await asyncio.start_server(upstream_handler, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    async with (
        upstream,
        FaultProxy(f"http://127.0.0.1:{port}") as proxy,
        aiohttp.ClientSession() as session,
        session.post(proxy.url + BINDING, data=b"{}") as response,
    ):
        return response.status, await response.read(), proxy.stats


async def test_a_bind_whose_upstream_dies_unanswered_is_recorded_as_uncertain():
    """An upstream that takes the request and closes the connection without a word - an
    API server killed mid-request - leaves the binding's fate unknown: the proxy records
    it as uncertain, never as accepted."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    status, _, stats = await post_binding(hang_up)
    assert status >= 500
    assert stats.binds_uncertain == {BINDING: 1} and not stats.binds_accepted


@pytest.mark.parametrize(
    ("message", "uncertain"),
    [
        # etcd killed under the write: kube-apiserver answers any storage error of a
        # binding 409, though etcd may have committed it (the binder retries it).
        ('Operation cannot be fulfilled on pods/binding "p1": rpc error: code = Unavailable', True),
        (
            'Operation cannot be fulfilled on pods/binding "p1": pod p1 is already assigned '
            'to node "n1"',
            False,
        ),
        ("Precondition failed: UID in precondition: u1, UID in object meta: u2", False),
    ],
)
async def test_a_bind_conflict_that_says_nothing_of_the_pod_is_recorded_as_uncertain(
    message, uncertain
):
    body = status_body(409, "Conflict", message)

    async def conflict(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = f"HTTP/1.1 409 Conflict\r\nContent-Length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()

    status, answer, stats = await post_binding(conflict)
    assert status == 409 and ApiError(409, answer).message == message
    assert stats.binds_uncertain == ({BINDING: 1} if uncertain else {})
    assert not stats.binds_accepted


async def test_pod_deletions_are_recorded_by_namespace_and_name():
    """Preemption deletes its victims; the reliability checks tell them from lost pods."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    async with (
        upstream,
        FaultProxy(f"http://127.0.0.1:{port}") as proxy,
        aiohttp.ClientSession() as session,
    ):
        for path in (
            "/api/v1/namespaces/team-a/pods/victim",
            "/api/v1/namespaces/team-a/configmaps/not-a-pod",
            "/api/v1/namespaces/team-a/pods/victim/ephemeralcontainers",
        ):
            async with session.delete(proxy.url + path) as response:
                assert response.status == 200
    assert proxy.stats.pods_deleted == {"team-a/victim"}


# -- in front of the real API server -----------------------------------------------------


@pytest.mark.integration
async def test_requests_pass_through_to_the_api_server(proxied_api, proxy, namespace):
    response = await proxied_api.request("GET", f"/api/v1/namespaces/{namespace}")
    assert msgspec.json.decode(response.body)["metadata"]["name"] == namespace
    with pytest.raises(ApiError) as raised:
        await proxied_api.request("GET", "/api/v1/namespaces/not-there")
    assert raised.value.status == 404 and proxy.stats.forwarded == 2


@pytest.mark.integration
async def test_throttling_answers_429_with_retry_after(proxied_api, proxy):
    proxy.faults.throttle, proxy.faults.throttle_match, proxy.faults.retry_after = 1, "", 7
    with pytest.raises(ApiError) as raised:
        await proxied_api.request("GET", "/api/v1/namespaces")
    assert raised.value.status == 429 and raised.value.retry_after == 7.0
    assert (await proxied_api.request("GET", "/api/v1/namespaces")).status == 200


@pytest.mark.integration
async def test_gone_is_an_error_event_or_an_http_410(proxied_api, proxy):
    params = {"watch": "true", "resourceVersion": "1"}
    proxy.faults.gone_watches = 2
    async with proxied_api.stream("/api/v1/namespaces", params=params) as body:
        event = msgspec.json.decode(await body.read())
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    proxy.faults.gone_as_event = False
    with pytest.raises(ApiError) as raised:
        async with proxied_api.stream("/api/v1/namespaces", params=params):
            pass
    assert raised.value.status == 410 and raised.value.reason == "Expired"


@pytest.mark.integration
async def test_dropping_watches_cuts_the_stream_without_its_end(proxied_api, proxy, eventually):
    params = {"watch": "true", "timeoutSeconds": "60"}
    async with proxied_api.stream("/api/v1/namespaces", params=params) as body:
        await body.readline()  # the stream is flowing
        await eventually(lambda: proxy.drop_watches() == 1, what="an open watch")
        with pytest.raises(aiohttp.ClientPayloadError):
            while await body.readany():
                pass
