"""The API client: aiohttp requests to the API server with kubeconfig or in-cluster credentials.

Credentials are looked for in kubectl's order (``kubeconfig.choose_kubeconfig``) and loaded
by the official ``kubernetes`` package's loaders (kubeconfig contexts, exec and OIDC
plugins, in-cluster service-account tokens); every request then goes through
aiohttp, because the official client's generated models are far too slow for the hot path.
Rotated tokens (in-cluster projected tokens, exec plugins) are picked up by calling the
loader's refresh hook periodically and after a 401.

A client-side token bucket (``qps``/``burst``, like client-go's) spaces out requests so a
burst of thousands of binds does not trip the API server's priority-and-fairness limits.
Each request's outcome (a watch's when its headers arrive, as client-go measures it) is
told to ``on_request``, which the scheduler points at its ``rest_client_*`` metrics.

Short requests (binds, events, leases, lists) share one bounded pool of keep-alive
connections; watches, which hold a connection for minutes, have a pool of their own so they
never take a slot a bind waits for. Each pool counts the connections it opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from kubesalvo.sched.kubeconfig import KubeconfigChoice, choose_kubeconfig, first_current_context

log = logging.getLogger(__name__)

# How often the credential loader's refresh hook is consulted even without a 401; the
# in-cluster loader re-reads the token file once a minute, so this keeps rotation prompt.
TOKEN_REFRESH_SECONDS = 60.0

USER_AGENT = "kubesalvo/0.1"

# Connections for short requests. A burst's binds and events each take one, so the pool
# grows to this width in a backlog (every one a TLS handshake, counted below) and then is
# reused, never closed, for the rest of a run. A pool of 64 opened fewer but halved the
# backlog's throughput (binds queued for a slot longer than the API server's answers got
# faster): see bench/RESULTS.md, issue 33 fifth pass.
REQUEST_CONNECTIONS = 200

# How long an idle connection is kept: long enough to span the gaps between bursts, and
# below kube-apiserver's own 90 s idle timeout so that the client, not the server, closes
# it (a request never lands on a connection the server is closing).
KEEPALIVE_SECONDS = 60.0

# Where a pod's service account is mounted; under $KUBESALVO_INCLUSTER_ROOT (or
# ``--incluster-root``) when set, so that the in-cluster path can run outside a pod.
SERVICE_ACCOUNT_DIR = "var/run/secrets/kubernetes.io/serviceaccount"
INCLUSTER_ROOT_ENV = "KUBESALVO_INCLUSTER_ROOT"


class Status(msgspec.Struct, omit_defaults=True):
    """A metav1.Status, as the API server returns it for errors (and in watch ERROR events)."""

    code: int = 0
    reason: str = ""
    message: str = ""
    status: str = ""


_status_decoder = msgspec.json.Decoder(Status)


def status_body(code: int, reason: str, message: str) -> bytes:
    """A metav1.Status error body, as the API server (and kube-scheduler) answer."""
    return msgspec.json.encode(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, body: bytes, retry_after: float | None = None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after
        try:
            decoded = _status_decoder.decode(body)
            self.reason, self.message = decoded.reason, decoded.message
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.reason, self.message = "", body[:200].decode("utf-8", "replace")
        super().__init__(f"{status} {self.reason}: {self.message}")

    @property
    def transient(self) -> bool:
        """Whether retrying the same request may succeed (throttling or server trouble)."""
        return self.status == 429 or self.status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (the API server only sends delta-seconds)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class TokenBucket:
    """A client-side rate limiter: ``qps`` tokens per second, at most ``burst`` saved up.

    ``reserve`` is pure bookkeeping on an injectable clock and returns how long the caller
    must wait for its token, so the arithmetic is testable without sleeping; ``acquire``
    sleeps that long. A ``qps`` of 0 or less disables limiting.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take one token, possibly borrowed from the future; return the wait in seconds."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        # Tokens go negative so that waiters queue up in order, each a 1/qps slot apart.
        return -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass
class Credentials:
    """Where the API server is and how to authenticate to it."""

    server: str
    ca_file: str | None = None
    verify: bool = True
    cert_file: str | None = None
    key_file: str | None = None
    tls_server_name: str | None = None
    token: str | None = None  # the bare bearer token, without "Bearer "
    # Called to obtain a fresh token (rotated files, exec plugins); None when static.
    refresh: Callable[[], str | None] | None = None
    # The pod's namespace, with in-cluster credentials (None from a kubeconfig).
    namespace: str | None = None
    # Where these came from (files and what chose them), for the start-up log.
    source: str = ""

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.server.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _bearer(configuration: Any) -> str | None:
    value = configuration.api_key.get("BearerToken") or configuration.api_key.get("authorization")
    if not value:
        return None
    scheme, _, rest = value.partition(" ")
    return rest if scheme.lower() == "bearer" and rest else value


def service_account_dir(root: str | None = None) -> Path:
    """The service-account folder: under ``root``, else $KUBESALVO_INCLUSTER_ROOT, else /."""
    base = root or os.environ.get(INCLUSTER_ROOT_ENV) or "/"
    return Path(base) / SERVICE_ACCOUNT_DIR


class CredentialsError(Exception):
    """The credentials could not be loaded; the message says from where and why."""


def load_credentials(
    kubeconfig: str | None = None,
    context: str | None = None,
    incluster_root: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    kubeconfig_origin: str = "--kubeconfig",
) -> Credentials:
    """Credentials in kubectl's order: ``kubeconfig``, else $KUBECONFIG's files (merged,
    first wins), else ~/.kube/config, else the pod's service account (see ``kubeconfig``).

    In-cluster: the API server from KUBERNETES_SERVICE_HOST/PORT, the token (re-read every
    minute, as projected tokens rotate), CA and namespace from the service-account folder.
    Any failure is raised as ``CredentialsError`` naming the source that was tried.
    """
    choice = choose_kubeconfig(kubeconfig, environ, kubeconfig_origin)
    try:
        return _load(choice, context, incluster_root)
    except Exception as error:
        raise CredentialsError(f"{choice.describe()}: {error}") from error


def _load(choice: KubeconfigChoice, context: str | None, incluster_root: str | None) -> Credentials:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.incluster_config import InClusterConfigLoader

    configuration = k8s_client.Configuration()
    namespace = None
    if not choice.in_cluster:
        for path in choice.files:
            if not Path(path).is_file():
                raise FileNotFoundError(f"{path} does not exist")
        k8s_config.load_kube_config(
            # The package merges a $PATH-like list itself, each file's relative paths
            # resolved against its own folder; only current-context needs help.
            config_file=os.pathsep.join(choice.files),
            context=context or first_current_context(choice.files),
            client_configuration=configuration,
            persist_config=False,
        )
    else:
        folder = service_account_dir(incluster_root)
        InClusterConfigLoader(
            token_filename=str(folder / "token"), cert_filename=str(folder / "ca.crt")
        ).load_and_set(configuration)
        with contextlib.suppress(OSError):
            namespace = (folder / "namespace").read_text().strip() or None

    refresh: Callable[[], str | None] | None = None
    hook = configuration.refresh_api_key_hook
    if hook is not None:

        def refresh() -> str | None:
            hook(configuration)
            return _bearer(configuration)

    return Credentials(
        server=configuration.host.rstrip("/"),
        ca_file=configuration.ssl_ca_cert,
        verify=bool(configuration.verify_ssl),
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        tls_server_name=getattr(configuration, "tls_server_name", None),
        token=_bearer(configuration),
        refresh=refresh,
        namespace=namespace,
        source=choice.describe(),
    )


class CountingConnector(aiohttp.TCPConnector):
    """A TCPConnector that counts the connections it opened (each one a TLS handshake)."""

    opened = 0

    async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> Any:
        protocol = await super()._create_connection(req, traces, timeout)
        self.opened += 1
        return protocol


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes


class ApiClient:
    """One aiohttp session to the API server, shared by informers, binder, events and leases.

    ``request`` returns the body bytes of a 2xx answer (callers decode them with their own
    msgspec decoders) and raises ``ApiError`` otherwise; ``stream`` yields the lines of a
    watch. Every request first takes a token from the client-side limiter.
    """

    def __init__(
        self,
        credentials: Credentials,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_connections: int = REQUEST_CONNECTIONS,
        keepalive_timeout: float = KEEPALIVE_SECONDS,
        request_timeout: float = 30.0,
    ) -> None:
        self.credentials = credentials
        self.limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self._max_connections = max_connections
        self._keepalive_timeout = keepalive_timeout
        self._session: aiohttp.ClientSession | None = None
        self._stream_session: aiohttp.ClientSession | None = None
        # Connections opened by the sessions already closed (a session is recreated after
        # a close), so that ``connections_opened`` covers the client's whole life.
        self._opened_before = 0
        self._token = credentials.token
        self._token_checked = time.monotonic()
        # Told (method, status code or "<error>", seconds to the answer's headers).
        self.on_request: Callable[[str, str, float], None] | None = None

    @property
    def server(self) -> str:
        return self.credentials.server

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        connector = CountingConnector(
            ssl=self.credentials.ssl_context(),
            limit=limit,
            keepalive_timeout=self._keepalive_timeout,
            enable_cleanup_closed=True,
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            # The session itself never times out; each call sets its own limits.
            timeout=aiohttp.ClientTimeout(total=None),
        )

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = self._new_session(self._max_connections)
        return self._session

    def _get_stream_session(self) -> aiohttp.ClientSession:
        # Unbounded: every informer's watch needs its own connection at once.
        if self._stream_session is None or self._stream_session.closed:
            self._stream_session = self._new_session(0)
        return self._stream_session

    @staticmethod
    def _opened(session: aiohttp.ClientSession | None) -> int:
        connector = session.connector if session is not None else None
        return connector.opened if isinstance(connector, CountingConnector) else 0

    @property
    def connections_opened(self) -> int:
        """Connections opened for short requests (not watches) since the client was made."""
        return self._opened_before + self._opened(self._session)

    @property
    def watch_connections_opened(self) -> int:
        """Connections opened for watches by the current session."""
        return self._opened(self._stream_session)

    async def close(self) -> None:
        # Said once at the end, so a run's connection churn can be read from its log.
        log.info(
            "API connections opened: %d for requests (pool of %d), %d for watches",
            self.connections_opened,
            self._max_connections,
            self.watch_connections_opened,
        )
        if self._session is not None:
            self._opened_before += self._opened(self._session)
            await self._session.close()
            self._session = None
        if self._stream_session is not None:
            await self._stream_session.close()
            self._stream_session = None

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _report(self, method: str, code: str, started: float) -> None:
        if self.on_request is not None:
            self.on_request(method, code, time.monotonic() - started)

    def _refresh_token(self, force: bool = False) -> None:
        refresh = self.credentials.refresh
        if refresh is None:
            return
        now = time.monotonic()
        if force or now - self._token_checked >= TOKEN_REFRESH_SECONDS:
            self._token_checked = now
            self._token = refresh() or self._token

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        self._refresh_token()
        headers: dict[str, str] = {}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if extra:
            headers.update(extra)
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
        rate_limited: bool = True,
        timeout: float | None = None,
    ) -> Response:
        """Send one request; raise ``ApiError`` for a non-2xx status.

        aiohttp's own errors (connection refused or reset, timeouts) propagate unchanged:
        the caller decides whether they are worth a retry.
        """
        if rate_limited:
            await self.limiter.acquire()
        extra = {"Content-Type": content_type} if body is not None else None
        for attempt in range(2):
            started, answered = time.monotonic(), False
            try:
                async with self._get_session().request(
                    method,
                    self.server + path,
                    params=params,
                    data=body,
                    headers=self._headers(extra),
                    server_hostname=self.credentials.tls_server_name,
                    timeout=aiohttp.ClientTimeout(total=timeout or self.request_timeout),
                ) as raw:
                    answered = True
                    self._report(method, str(raw.status), started)
                    data = await raw.read()
                    if raw.status == 401 and attempt == 0 and self.credentials.refresh is not None:
                        # A rotated token: reload it once and try again.
                        self._refresh_token(force=True)
                        continue
                    if raw.status >= 300:
                        raise ApiError(
                            raw.status, data, parse_retry_after(raw.headers.get("Retry-After"))
                        )
                    return Response(raw.status, raw.headers, data)
            except (aiohttp.ClientError, TimeoutError, OSError):
                if not answered:
                    self._report(method, "<error>", started)
                raise
        raise AssertionError("unreachable: the loop returns or raises")

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        inactivity_timeout: float | None = None,
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """Open a long-lived GET (a watch) and yield its body stream.

        ``inactivity_timeout`` bounds the silence between two reads: a watch whose
        connection died without a FIN is noticed instead of hanging forever.
        """
        await self.limiter.acquire()
        started, answered = time.monotonic(), False
        try:
            async with self._get_stream_session().get(
                self.server + path,
                params=params,
                headers=self._headers(None),
                server_hostname=self.credentials.tls_server_name,
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self.request_timeout, sock_read=inactivity_timeout
                ),
            ) as raw:
                answered = True
                self._report("GET", str(raw.status), started)
                if raw.status == 401 and self.credentials.refresh is not None:
                    self._refresh_token(force=True)
                if raw.status >= 300:
                    data = await raw.read()
                    raise ApiError(
                        raw.status, data, parse_retry_after(raw.headers.get("Retry-After"))
                    )
                yield raw.content
        except (aiohttp.ClientError, TimeoutError, OSError):
            if not answered:
                self._report("GET", "<error>", started)
            raise


# Errors of the transport that may heal on a retry: resets, refused connections, timeouts.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    asyncio.TimeoutError,
    ConnectionError,
)


def is_transient(error: BaseException) -> bool:
    """Whether a failed request is worth retrying (throttling, 5xx, transport trouble)."""
    if isinstance(error, ApiError):
        return error.transient
    return isinstance(error, TRANSPORT_ERRORS)
