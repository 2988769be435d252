"""``kubesalvo image-reporter`` as the DaemonSet runs it, on the real API server.

It runs with a ServiceAccount token holding exactly the ClusterRole of
deploy/overlays/image-reporter (as kubectl renders it) and does its job; a token without
``patch`` on nodes gets a log line that says so. The long-running command rides out a
failing crictl with one line per try, writes once crictl answers, and exits 0 on SIGTERM;
wrong flags exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.plugins.image_locality import decode_annotation
from tests.helpers.deploy import (
    DEPLOY,
    bind_rules,
    delete_cluster_rbac,
    find,
    render,
    service_account_token,
    token_kubeconfig,
)
from tests.sched.image_reporter.fake_crictl import REAL_IMAGES, FakeCrictl
from tests.sched.image_reporter.test_agent import annotation_of

pytestmark = pytest.mark.integration

ACCOUNT = "kubesalvo-image-reporter"


def reporter(*args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kubesalvo.sched.cli", "image-reporter", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60.0) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


def test_the_overlays_rbac_is_enough_and_without_patch_it_says_what_is_missing(
    control_plane: Any, namespace: str, node: str, tmp_path: Path
) -> None:
    rendered = render(control_plane, DEPLOY / "overlays" / "image-reporter")
    rules = find(rendered, "ClusterRole", "kubesalvo:image-reporter")["rules"]
    crictl = FakeCrictl(tmp_path / "crictl")
    granted = bind_rules(control_plane, namespace, ACCOUNT, rules)
    try:
        token = service_account_token(control_plane, namespace, ACCOUNT)
        kubeconfig = token_kubeconfig(control_plane, token, tmp_path / "kubeconfig")
        flags = ["--node", node, "--crictl", str(crictl.path), "--kubeconfig", str(kubeconfig)]
        code, err = finish(reporter(*flags, "--once"))
        assert code == 0, err
        assert sorted(decode_annotation(annotation_of(control_plane, node) or "").images) == (
            sorted(REAL_IMAGES)
        )
        delete_cluster_rbac(control_plane, granted)
        granted = bind_rules(
            control_plane,
            namespace,
            ACCOUNT,
            [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        )
        deadline = time.monotonic() + 30
        while True:  # RBAC changes reach the authorizer through its informer
            code, err = finish(reporter(*flags, "--once"))
            if code == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert code == 1, err
        assert "403" in err and "needs `patch` on nodes" in err
        assert "Traceback" not in err
    finally:
        delete_cluster_rbac(control_plane, granted)


def test_the_agent_rides_out_a_failing_crictl_and_stops_cleanly_on_sigterm(
    control_plane: Any, node: str, tmp_path: Path
) -> None:
    crictl = FakeCrictl(tmp_path / "crictl")
    crictl.fail("crictl: connect: no such file or directory\n")
    process = reporter(
        "--node",
        node,
        "--interval",
        "1s",
        "--crictl",
        str(crictl.path),
        "--kubeconfig",
        str(control_plane.kubeconfig),
    )
    try:
        deadline = time.monotonic() + 60
        while len(crictl.calls()) < 3 and time.monotonic() < deadline:
            assert process.poll() is None
            time.sleep(0.2)
        assert annotation_of(control_plane, node) is None
        crictl.fail(None)
        while annotation_of(control_plane, node) is None and time.monotonic() < deadline:
            assert process.poll() is None
            time.sleep(0.2)
        assert annotation_of(control_plane, node) is not None
        process.send_signal(signal.SIGTERM)
        code, err = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert code == 0, err
    assert "cannot list the images of node" in err and "no such file or directory" in err
    assert "now lists 3 images" in err
    assert "received SIGTERM: stopping" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--node", "n", "--interval", "soon"], "invalid duration"),
        (["--node", "n", "--interval", "0s"], "positive duration"),
        (["--interval", "30s"], "--node (or $NODE_NAME) is required"),
        (["--node", "n", "--max-bytes", "10"], "--max-bytes"),
    ],
)
def test_wrong_flags_exit_2(flags: list[str], said: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    code, err = finish(reporter(*flags, env=env))
    assert code == 2, err
    assert said in err and "Traceback" not in err


def test_without_credentials_it_exits_1(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "KUBESALVO_INCLUSTER_ROOT": str(tmp_path),
        "HOME": str(tmp_path),
    }
    code, err = finish(reporter("--node", "n", env=env))
    assert code == 1, err
    assert "cannot load credentials from in-cluster service account" in err
    assert "Traceback" not in err
