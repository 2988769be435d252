"""Delegated authentication and authorization of the secure port, through the API server.

As kube-scheduler's secure port does it: a bearer token is checked with a TokenReview
(``authentication.k8s.io/v1``) and the caller it names is asked about with a
SubjectAccessReview (``authorization.k8s.io/v1``) for the request's non-resource path and
verb (the HTTP method in lower case), so that RBAC's ``nonResourceURLs: ["/metrics"]`` /
``verbs: ["get"]`` is what lets Prometheus in. A request without credentials is
``system:anonymous`` (group ``system:unauthenticated``) and is authorized like anyone else,
which RBAC refuses unless a binding says otherwise: 403. A token the API server does not
accept, or a TokenReview that cannot be made, is 401; a SubjectAccessReview that cannot be
made is 500, as upstream answers.

The always-allowed paths (``/healthz``, ``/livez``, ``/readyz`` by default, like
``--authorization-always-allow-paths``) skip both checks, so probes work without a token
and even while the API server is unreachable. Answers, refusals included, are cached for
``cache_ttl`` seconds in LRUs of ``CACHE_ENTRIES`` (upstream's delegated caches keep both
for 10s), so a scrape every 15s costs at most two small requests to the API server.

Anyone who reaches the port can send a new random token with every request, and each one
is a cache miss. So the reviews go through a token bucket of their own (``REVIEW_QPS``/
``REVIEW_BURST``, the limits upstream gives its delegated authentication and authorization
clients), apart from the scheduler's limiter so that a scrape never waits behind a burst
of binds, and concurrent requests with the same token or question share one review.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec
from aiohttp import web

from kubesalvo.sched.client import ApiClient, TokenBucket, status_body

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
ALWAYS_ALLOW_PATHS = ("/healthz", "/livez", "/readyz")
CACHE_TTL_SECONDS = 10.0
CACHE_ENTRIES = 1024
# kube-apiserver's DelegatingAuthenticationOptions/DelegatingAuthorizationOptions give their
# review clients 200 QPS and a burst of 400.
REVIEW_QPS = 200.0
REVIEW_BURST = 400

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class User:
    """Who a request is, as the API server's TokenReview said (or anonymous)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class _TtlCache(Generic[K, V]):
    """A small LRU of answers that expire ``ttl`` seconds after they were stored."""

    ttl: float
    size: int = CACHE_ENTRIES
    clock: Callable[[], float] = time.monotonic
    entries: OrderedDict[K, tuple[float, V]] = field(default_factory=OrderedDict)

    def get(self, key: K) -> V | None:
        hit = self.entries.get(key)
        if hit is None or hit[0] <= self.clock():
            self.entries.pop(key, None)
            return None
        self.entries.move_to_end(key)
        return hit[1]

    def put(self, key: K, value: V) -> None:
        self.entries[key] = (self.clock() + self.ttl, value)
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


class Unauthenticated(Exception):
    """The token was refused, or could not be reviewed: 401."""


class AuthorizationFailed(Exception):
    """The SubjectAccessReview could not be made: 500."""


class DelegatedAuth:
    """Asks the API server who a token is and whether that caller may do a request."""

    def __init__(
        self,
        client: ApiClient,
        always_allow: Collection[str] = ALWAYS_ALLOW_PATHS,
        cache_ttl: float = CACHE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        limiter: TokenBucket | None = None,
    ) -> None:
        self.client = client
        self.limiter = limiter or TokenBucket(REVIEW_QPS, REVIEW_BURST)
        # Reviews under way, by cache key: a second asker awaits the first one's answer.
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self.always_allow = frozenset(always_allow)
        # A refused token is cached too: (None,) tells it apart from a miss.
        self._tokens: _TtlCache[str, tuple[User | None]] = _TtlCache(cache_ttl, clock=clock)
        self._decisions: _TtlCache[tuple[User, str, str], tuple[bool, str]] = _TtlCache(
            cache_ttl, clock=clock
        )

    def allowed_without_auth(self, path: str) -> bool:
        # A trailing '*' allows a prefix, as upstream's --authorization-always-allow-paths.
        if path in self.always_allow:
            return True
        return any(p.endswith("*") and path.startswith(p[:-1]) for p in self.always_allow)

    async def authenticate(self, authorization: str | None) -> User:
        """The caller of a request with this Authorization header."""
        if not authorization:
            return User(ANONYMOUS, groups=(UNAUTHENTICATED,))
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("only bearer tokens are accepted")
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is None:
            cached = await self._once(("token", key), self._reviewed_token(key, token))
        user = cached[0]
        if user is None:
            raise Unauthenticated("the token was not accepted")
        return user

    async def _once(self, key: Any, review: Coroutine[Any, Any, V]) -> V:
        """``review``'s answer, shared with every caller asking under ``key`` meanwhile."""
        pending = self._pending.get(key)
        if pending is not None:
            review.close()  # not needed: the first asker's review answers this one too
            shared: V = await asyncio.shield(pending)
            return shared
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            answer = await review
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        else:
            future.set_result(answer)
            return answer
        finally:
            del self._pending[key]

    async def _reviewed_token(self, key: str, token: str) -> tuple[User | None]:
        answer = (await self._review_token(token),)
        self._tokens.put(key, answer)
        return answer

    async def _review_token(self, token: str) -> User | None:
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        try:
            answer = await self._post(TOKEN_REVIEWS, review)
        except Exception as error:
            # Not cached: the next request tries again.
            log.warning("TokenReview failed: %s", error)
            raise Unauthenticated(f"TokenReview failed: {error}") from error
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        extra = user.get("extra") or {}
        return User(
            name=user.get("username", ""),
            uid=user.get("uid", ""),
            groups=tuple(user.get("groups") or ()),
            extra=tuple(sorted((k, tuple(v)) for k, v in extra.items())),
        )

    async def authorize(self, user: User, path: str, verb: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``, and the reason given."""
        key = (user, path, verb)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        return await self._once(("access", key), self._reviewed_access(key))

    async def _reviewed_access(self, key: tuple[User, str, str]) -> tuple[bool, str]:
        user, path, verb = key
        review: dict[str, Any] = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user.name,
                "groups": list(user.groups),
                "nonResourceAttributes": {"path": path, "verb": verb},
            },
        }
        if user.uid:
            review["spec"]["uid"] = user.uid
        if user.extra:
            review["spec"]["extra"] = {k: list(v) for k, v in user.extra}
        try:
            answer = await self._post(SUBJECT_ACCESS_REVIEWS, review)
        except Exception as error:
            log.warning("SubjectAccessReview failed: %s", error)
            raise AuthorizationFailed(f"SubjectAccessReview failed: {error}") from error
        status = answer.get("status") or {}
        decision = (bool(status.get("allowed")), str(status.get("reason") or ""))
        self._decisions.put(key, decision)
        return decision

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        # Limited by the reviews' own bucket, not the scheduler's: a scrape must not wait
        # behind a burst of binds.
        await self.limiter.acquire()
        response = await self.client.request(
            "POST", path, body=msgspec.json.encode(body), rate_limited=False, timeout=10.0
        )
        decoded: dict[str, Any] = msgspec.json.decode(response.body)
        return decoded


def status_response(code: int, reason: str, message: str) -> web.Response:
    """A metav1.Status error, as the API server and kube-scheduler answer."""
    return web.Response(
        body=status_body(code, reason, message),
        status=code,
        content_type="application/json",
    )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def auth_middleware(auth: DelegatedAuth) -> Any:
    """An aiohttp middleware that lets a request through only when ``auth`` says so."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if auth.allowed_without_auth(path):
            return await handler(request)
        try:
            user = await auth.authenticate(request.headers.get("Authorization"))
        except Unauthenticated:
            return status_response(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        try:
            allowed, reason = await auth.authorize(user, path, verb)
        except AuthorizationFailed as error:
            return status_response(500, "InternalError", f"Internal error occurred: {error}")
        if not allowed:
            message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
            if reason:
                message += f": {reason}"
            return status_response(403, "Forbidden", message)
        return await handler(request)

    return check
