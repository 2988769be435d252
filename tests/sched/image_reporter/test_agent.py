"""The reporter's loop against the real API server: the annotation is written, read back
through the API, rewritten only when the runtime's image set changes, and every failure
(crictl failing or printing garbage, an unknown node, an unreachable server) is one log
line and a retry, with the annotation last written left in place."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.plugins.image_locality import ANNOTATION, ReportedImage, decode_annotation
from kubesalvo.sched.client import ApiClient, Credentials, load_credentials
from kubesalvo.sched.image_reporter.agent import ImageReporter, Outcome
from kubesalvo.sched.image_reporter.crictl import list_images
from tests.sched.image_reporter.fake_crictl import REAL_IMAGES, FakeCrictl

pytestmark = pytest.mark.integration

EXTRA = ReportedImage(("docker.io/library/nginx:1.27",), (), 72_000_000)


def annotation_of(control_plane: Any, node: str) -> str | None:
    async def get(client: Any) -> dict[str, Any]:
        return dict(await client.request("GET", f"/api/v1/nodes/{node}"))

    got = control_plane.call(get)
    return (got["metadata"].get("annotations") or {}).get(ANNOTATION)


def reporter_for(credentials: Credentials, node: str, crictl: FakeCrictl) -> Any:
    """An ``ImageReporter`` on a fresh client; use as ``async with``."""

    class Session:
        async def __aenter__(self) -> ImageReporter:
            self.client = ApiClient(credentials)
            return ImageReporter(
                self.client, node, lambda: list_images(str(crictl.path)), interval=0.2
            )

        async def __aexit__(self, *exc: object) -> None:
            await self.client.close()

    return Session()


def test_the_annotation_is_written_read_back_and_rewritten_only_on_change(
    control_plane: Any, node: str, tmp_path: Path
) -> None:
    crictl = FakeCrictl(tmp_path)
    credentials = load_credentials(str(control_plane.kubeconfig))

    async def scenario() -> list[Any]:
        seen: list[Any] = []
        async with reporter_for(credentials, node, crictl) as reporter:
            seen.append(await reporter.step())
            seen.append(annotation_of(control_plane, node))
            seen.append(await reporter.step())  # the same set: nothing written
            seen.append(annotation_of(control_plane, node))
            crictl.serve([*REAL_IMAGES, EXTRA])  # an image pulled
            seen.append(await reporter.step())
            seen.append(annotation_of(control_plane, node))
            seen.append(reporter.patches)
        return seen

    first, written, second, unchanged, third, rewritten, patches = asyncio.run(scenario())
    assert first is Outcome.WRITTEN and second is Outcome.UNCHANGED and third is Outcome.WRITTEN
    assert written is not None and unchanged == written  # not even its time changed
    report = decode_annotation(written)
    assert sorted(report.images) == sorted(REAL_IMAGES)
    assert sorted(decode_annotation(rewritten).images) == sorted([*REAL_IMAGES, EXTRA])
    assert patches == 2


def test_failures_are_logged_and_leave_the_last_annotation(
    control_plane: Any, node: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crictl = FakeCrictl(tmp_path)
    credentials = load_credentials(str(control_plane.kubeconfig))
    caplog.set_level(logging.INFO, "kubesalvo.image_reporter")

    async def scenario() -> list[Outcome]:
        outcomes = []
        async with reporter_for(credentials, node, crictl) as reporter:
            outcomes.append(await reporter.step())
            crictl.fail("connect: connect endpoint 'unix:///run/containerd/containerd.sock'\n")
            outcomes.append(await reporter.step())
            crictl.fail(None)
            crictl.serve_text('{"images": [')
            outcomes.append(await reporter.step())
            crictl.serve([EXTRA])
            reporter.node = node + "-gone"
            outcomes.append(await reporter.step())
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes == [
        Outcome.WRITTEN,
        Outcome.LIST_FAILED,
        Outcome.LIST_FAILED,
        Outcome.PATCH_FAILED,
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert any("exited 1: connect: connect endpoint" in m for m in messages), messages
    assert any("crictl printed no JSON" in m for m in messages), messages
    assert any("404" in m and "--node must name the node" in m for m in messages), messages
    assert all(r.exc_info is None for r in caplog.records)
    # What the failed steps could not replace is still there.
    assert sorted(decode_annotation(annotation_of(control_plane, node) or "").images) == sorted(
        REAL_IMAGES
    )


def test_an_unreachable_api_server_is_a_failed_patch_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crictl = FakeCrictl(tmp_path)
    # A port nothing listens on (bound, then closed).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    credentials = Credentials(server=f"http://127.0.0.1:{port}")

    async def scenario() -> Outcome:
        async with reporter_for(credentials, "n", crictl) as reporter:
            reporter.client.request_timeout = 5.0
            return await reporter.step()

    assert asyncio.run(scenario()) is Outcome.PATCH_FAILED
    assert any("cannot reach the API server" in r.getMessage() for r in caplog.records)


def test_the_loop_retries_until_the_runtime_answers_then_writes(
    control_plane: Any, node: str, tmp_path: Path
) -> None:
    crictl = FakeCrictl(tmp_path)
    crictl.fail("runtime not ready\n")
    credentials = load_credentials(str(control_plane.kubeconfig))

    async def scenario() -> int:
        async with reporter_for(credentials, node, crictl) as reporter:
            running = asyncio.create_task(reporter.run())
            await asyncio.sleep(1.5)
            assert reporter.patches == 0 and not running.done()
            crictl.fail(None)
            for _ in range(100):
                if reporter.patches:
                    break
                await asyncio.sleep(0.1)
            reporter.stop()
            await asyncio.wait_for(running, 10)
            return reporter.patches

    assert asyncio.run(scenario()) == 1
    assert len(crictl.calls()) >= 3  # retried while the runtime failed
    assert annotation_of(control_plane, node) is not None
