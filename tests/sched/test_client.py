"""The API client: rate limiting, error decoding and credentials on their own, then
requests to the real API server (TLS verified against the kubeconfig's CA, Status errors,
a rotated token picked up after a 401)."""

from __future__ import annotations

import ssl

import aiohttp
import msgspec
import pytest

from kubesalvo.sched.client import (
    ApiClient,
    ApiError,
    Credentials,
    TokenBucket,
    is_transient,
    load_credentials,
    parse_retry_after,
)
from tests.helpers.deploy import write_service_account


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_lets_a_burst_through_then_spaces_requests_by_one_over_qps():
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    waits = [bucket.reserve() for _ in range(3)]
    assert waits == pytest.approx([0.1, 0.2, 0.3])


def test_token_bucket_refills_with_time_but_never_beyond_burst():
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.now += 60.0  # long idle: at most `burst` tokens saved
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)


def test_token_bucket_with_zero_qps_never_waits():
    bucket = TokenBucket(qps=0, burst=1, clock=FakeClock())
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_api_error_reads_the_status_reason_and_message():
    body = (
        b'{"kind":"Status","status":"Failure","message":"pods \\"x\\" not found",'
        b'"reason":"NotFound","code":404}'
    )
    error = ApiError(404, body)
    assert (error.status, error.reason, error.message) == (404, "NotFound", 'pods "x" not found')
    assert not error.transient


def test_api_error_keeps_a_non_json_body_as_its_message():
    error = ApiError(502, b"Bad Gateway")
    assert error.message == "Bad Gateway"
    assert error.transient


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (ApiError(429, b"", 2.0), True),
        (ApiError(500, b""), True),
        (ApiError(503, b""), True),
        (ApiError(409, b""), False),
        (ApiError(403, b""), False),
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (ValueError(), False),
    ],
)
def test_only_throttling_server_errors_and_transport_errors_are_transient(error, transient):
    assert is_transient(error) is transient


@pytest.mark.parametrize(
    ("header", "seconds"), [("3", 3.0), ("0", 0.0), (None, None), ("", None), ("soon", None)]
)
def test_retry_after_is_read_as_seconds(header, seconds):
    assert parse_retry_after(header) == seconds


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: s3cret
- name: other
  user:
    token: other-token
contexts:
- name: local
  context: {cluster: local, user: admin}
- name: second
  context: {cluster: local, user: other}
current-context: local
"""


def test_credentials_come_from_the_kubeconfigs_current_context(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    credentials = load_credentials(str(path))
    assert credentials.server == "https://127.0.0.1:6443"
    assert credentials.token == "s3cret"
    assert credentials.verify is False
    context = credentials.ssl_context()
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_NONE


def test_credentials_follow_a_named_context(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    assert load_credentials(str(path), context="second").token == "other-token"


def test_a_refreshed_token_replaces_the_old_one_in_the_authorization_header():
    tokens = iter(["rotated-1", "rotated-2"])
    credentials = Credentials(
        server="http://127.0.0.1:1", token="first", refresh=lambda: next(tokens)
    )
    client = ApiClient(credentials)
    assert client._headers(None)["Authorization"] == "Bearer first"
    client._refresh_token(force=True)
    assert client._headers(None)["Authorization"] == "Bearer rotated-1"


def test_plain_http_servers_get_no_tls_context():
    assert Credentials(server="http://127.0.0.1:8080").ssl_context() is False


# -- against the real API server ---------------------------------------------------------


@pytest.mark.integration
async def test_requests_reach_the_server_with_the_kubeconfigs_ca_and_token(credentials):
    assert credentials.verify and credentials.ca_file
    async with ApiClient(credentials) as client:
        response = await client.request("GET", "/version")
    assert response.status == 200
    assert msgspec.json.decode(response.body)["gitVersion"].startswith("v1.34")


@pytest.mark.integration
async def test_a_missing_object_raises_the_servers_status(api):
    with pytest.raises(ApiError) as raised:
        await api.request("GET", "/api/v1/namespaces/default/pods/does-not-exist")
    assert raised.value.status == 404 and raised.value.reason == "NotFound"


@pytest.mark.integration
async def test_a_rejected_token_is_refreshed_and_the_request_retried(credentials):
    refreshed = []

    def refresh() -> str | None:
        refreshed.append(True)
        return credentials.token

    stale = Credentials(
        server=credentials.server,
        ca_file=credentials.ca_file,
        verify=credentials.verify,
        token="expired-token",
        refresh=refresh,
    )
    async with ApiClient(stale) as client:
        client._token_checked = float("inf")  # no periodic refresh: only the 401 triggers it
        response = await client.request("GET", "/api/v1/namespaces/default")
    assert response.status == 200 and refreshed == [True]


@pytest.mark.integration
async def test_a_watch_stream_yields_the_servers_lines(api, namespace):
    params = {"watch": "true", "timeoutSeconds": "1", "fieldSelector": f"metadata.name={namespace}"}
    async with api.stream("/api/v1/namespaces", params=params) as body:
        lines = (await body.read()).splitlines()
    (line,) = lines
    event = msgspec.json.decode(line)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == namespace


@pytest.mark.integration
async def test_in_cluster_credentials_come_from_the_service_account_files(
    control_plane, credentials, tmp_path, monkeypatch
):
    folder = write_service_account(
        tmp_path, credentials.token, control_plane.ca_file.read_bytes(), "default"
    )
    host, port = credentials.server.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)

    in_cluster = load_credentials(None, incluster_root=str(tmp_path))
    assert in_cluster.server == credentials.server
    assert in_cluster.token == credentials.token
    assert in_cluster.ca_file == str(folder / "ca.crt")
    assert in_cluster.namespace == "default"
    assert in_cluster.refresh is not None  # the token file is re-read as it rotates
    async with ApiClient(in_cluster) as client:
        assert (await client.request("GET", "/api/v1/namespaces/default")).status == 200


@pytest.mark.integration
async def test_every_answer_and_every_failure_to_connect_is_reported(credentials):
    seen: list[tuple[str, str]] = []
    async with ApiClient(credentials, qps=0) as client:
        client.on_request = lambda method, code, seconds: seen.append((method, code))
        await client.request("GET", "/api/v1/namespaces/default")
        with pytest.raises(ApiError):
            await client.request("GET", "/api/v1/namespaces/no-such-namespace-here")
        async with client.stream(
            "/api/v1/namespaces", params={"watch": "1", "timeoutSeconds": "1"}
        ):
            pass
    closed = Credentials(server="https://127.0.0.1:1", token="t", verify=False)
    async with ApiClient(closed, qps=0, request_timeout=5) as client:
        client.on_request = lambda method, code, seconds: seen.append((method, code))
        with pytest.raises(aiohttp.ClientError):
            await client.request("POST", "/api/v1/namespaces", body=b"{}")
    assert seen == [("GET", "200"), ("GET", "404"), ("GET", "200"), ("POST", "<error>")]
