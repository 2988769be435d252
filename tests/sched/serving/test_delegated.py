"""The secure port on the real API server: a ServiceAccount token allowed `get` on the
non-resource URL /metrics reads the metrics; one without that right, an anonymous caller
and a token the server does not know are refused (403, 403, 401) with a Status body;
the health paths answer anyone. Authentication and authorization are the API server's
own (TokenReview, SubjectAccessReview): nothing is mocked."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from kubesalvo.sched.client import ApiClient, TokenBucket
from kubesalvo.sched.metrics import SchedulerMetrics
from kubesalvo.sched.server import HealthServer
from kubesalvo.sched.serving.certs import server_context
from kubesalvo.sched.serving.delegated import (
    DelegatedAuth,
    Unauthenticated,
    _TtlCache,
    auth_middleware,
)
from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token

METRICS_READER = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_forgets_an_answer_after_its_ttl_and_keeps_only_the_newest():
    clock = FakeClock()
    cache: _TtlCache[str, int] = _TtlCache(ttl=10.0, size=2, clock=clock)
    cache.put("a", 1)
    clock.now += 9.9
    assert cache.get("a") == 1
    clock.now += 0.2
    assert cache.get("a") is None
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        cache.put(key, value)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, 2, 3)


@pytest.fixture
def accounts(control_plane, namespace) -> Any:
    """Tokens of two ServiceAccounts: `reader` may get /metrics, `nobody` has no rights."""
    reader = service_account_token(control_plane, namespace, "reader")
    nobody = service_account_token(control_plane, namespace, "nobody")
    role = bind_rules(control_plane, namespace, "reader", METRICS_READER)
    try:
        yield {"reader": reader, "nobody": nobody, "role": role, "namespace": namespace}
    finally:
        delete_cluster_rbac(control_plane, role)


@pytest.fixture
async def secure(api) -> AsyncIterator[tuple[HealthServer, ssl.SSLContext]]:
    """A HealthServer on HTTPS with delegated auth through the real API server, and a
    client TLS context that trusts its self-signed certificate."""
    context, cert = server_context(None, None, "127.0.0.1")
    assert cert is not None
    server = HealthServer(
        SchedulerMetrics(),
        "127.0.0.1",
        0,
        tls=context,
        middlewares=[auth_middleware(DelegatedAuth(api))],
    )
    server.add_readiness_check("synced", lambda: True)
    await server.start()
    try:
        yield server, ssl.create_default_context(cadata=cert.decode())
    finally:
        await server.stop()


async def get(url: str, tls: ssl.SSLContext, authorization: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": authorization} if authorization else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, ssl=tls, headers=headers) as response,
    ):
        return response.status, await response.text()


@pytest.mark.integration
async def test_a_token_allowed_to_get_metrics_reads_them(secure, accounts):
    server, tls = secure
    assert server.url.startswith("https://127.0.0.1:")
    server.metrics.observe_attempt("scheduled", "kubesalvo", 0.01)
    status, body = await get(server.url + "/metrics", tls, f"Bearer {accounts['reader']}")
    assert status == 200, body
    assert 'scheduler_schedule_attempts_total{profile="kubesalvo",result="scheduled"} 1.0' in body


@pytest.mark.integration
async def test_a_token_without_the_right_gets_403_naming_its_user(secure, accounts):
    server, tls = secure
    status, body = await get(server.url + "/metrics", tls, f"Bearer {accounts['nobody']}")
    assert status == 403
    user = f"system:serviceaccount:{accounts['namespace']}:nobody"
    answer = json.loads(body)
    assert answer["message"] == f'forbidden: User "{user}" cannot get path "/metrics"'
    assert (answer["kind"], answer["reason"], answer["code"]) == ("Status", "Forbidden", 403)


@pytest.mark.integration
async def test_an_anonymous_caller_gets_403_and_an_unknown_token_401(secure, accounts):
    server, tls = secure
    status, body = await get(server.url + "/metrics", tls)
    assert status == 403
    assert "system:anonymous" in body
    status, body = await get(server.url + "/metrics", tls, "Bearer not-a-token")
    assert (status, json.loads(body)["reason"]) == (401, "Unauthorized")
    status, _ = await get(server.url + "/metrics", tls, "Basic dXNlcjpwYXNz")
    assert status == 401


@pytest.mark.integration
async def test_the_health_paths_answer_anyone(secure, accounts):
    server, tls = secure
    for path in ("/healthz", "/livez", "/readyz"):
        assert await get(server.url + path, tls) == (200, "ok")
        assert await get(server.url + path, tls, "Bearer not-a-token") == (200, "ok")
    # Only the listed paths: the right to /metrics is not a right to anything else.
    status, _ = await get(server.url + "/debug/queue", tls, f"Bearer {accounts['reader']}")
    assert status == 403


@pytest.mark.integration
async def test_a_decision_is_cached_for_its_ttl_then_asked_again(api, control_plane, accounts):
    clock = FakeClock()
    auth = DelegatedAuth(api, clock=clock)
    user = await auth.authenticate(f"Bearer {accounts['reader']}")
    assert user.name == f"system:serviceaccount:{accounts['namespace']}:reader"
    assert (await auth.authorize(user, "/metrics", "get"))[0]
    delete_cluster_rbac(control_plane, accounts["role"])
    # Within the TTL the cached answer stands, whatever RBAC says now.
    assert (await auth.authorize(user, "/metrics", "get"))[0]
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        clock.now += 11
        if not (await auth.authorize(user, "/metrics", "get"))[0]:
            break
        assert asyncio.get_running_loop().time() < deadline, "the revoked right was never seen"
        await asyncio.sleep(0.2)


class CountingAuth(DelegatedAuth):
    """Counts the reviews sent to the API server."""

    posts = 0

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.posts += 1
        return await super()._post(path, body)


@pytest.mark.integration
async def test_a_refused_token_is_not_reviewed_again_within_the_ttl(api):
    clock = FakeClock()
    auth = CountingAuth(api, clock=clock)
    for _ in range(3):
        with pytest.raises(Unauthenticated, match="not accepted"):
            await auth.authenticate("Bearer bogus")
    assert auth.posts == 1
    clock.now += 11
    with pytest.raises(Unauthenticated):
        await auth.authenticate("Bearer bogus")
    assert auth.posts == 2


@pytest.mark.integration
async def test_concurrent_requests_with_one_unknown_token_share_one_review(api):
    auth = CountingAuth(api)
    outcomes = await asyncio.gather(
        *(auth.authenticate("Bearer shared-bogus") for _ in range(20)), return_exceptions=True
    )
    assert all(isinstance(o, Unauthenticated) for o in outcomes), outcomes
    assert auth.posts == 1


@pytest.mark.integration
async def test_reviews_take_tokens_from_their_own_limiter_not_the_schedulers(credentials):
    reviews = TokenBucket(qps=1, burst=100, clock=FakeClock())
    async with ApiClient(credentials, qps=1, burst=1000) as client:
        auth = CountingAuth(client, limiter=reviews)
        for n in range(3):
            with pytest.raises(Unauthenticated):
                await auth.authenticate(f"Bearer random-{n}")
        assert auth.posts == 3
        # Three tokens taken from the reviews' bucket (its clock stands still) ...
        assert reviews._tokens == pytest.approx(100 - 3)
        # ... and none from the scheduler's, still full.
        assert client.limiter._tokens == 1000
