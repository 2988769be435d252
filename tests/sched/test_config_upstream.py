"""kubesalvo's own settings in a file upstream kube-scheduler v1.34 also accepts.

The settings sit in the args of a pluginConfig entry named ``Kubesalvo``: the real
kube-scheduler starts on that file and serves /healthz (it keeps args of a plugin it does
not know unread), and kubesalvo reads the very same file with the same settings in effect
as the deprecated top-level ``kubesalvo:`` block gave. The old block, fed to
kube-scheduler, makes it exit: the reason for the move.
"""

from __future__ import annotations

import secrets

import pytest
import yaml

from kubesalvo.sched.cluster import StartError, start_kube_scheduler
from kubesalvo.sched.config import parse_config
from tests.sched.test_app import SchedulerProcess

pytestmark = pytest.mark.integration

SETTINGS = {
    "maxBurstPods": 777,
    "burstGatheringWindow": "25ms",
    "podMaxInUnschedulablePodsDuration": "2m",
}


def test_kube_scheduler_starts_on_the_kubesalvo_plugin_args_and_kubesalvo_reads_them(
    control_plane,
):
    name = f"cfg-{secrets.token_hex(3)}"
    profiles = [
        {
            "schedulerName": name,
            "pluginConfig": [{"name": "Kubesalvo", "args": SETTINGS}],
        }
    ]
    upstream = start_kube_scheduler(control_plane, extra={"profiles": profiles}, name=name)
    try:
        text = upstream.config.read_text()  # the file kube-scheduler runs on
    finally:
        upstream.stop()
    ours = parse_config(text)
    old = parse_config(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": name}],
                "kubesalvo": SETTINGS,
            }
        )
    )
    assert ours.kubesalvo == old.kubesalvo
    assert ours.kubesalvo.max_burst_pods == 777
    assert ours.deprecations == ()
    assert [path for path, _ in old.deprecations] == ["kubesalvo"]


def test_kube_scheduler_refuses_the_deprecated_block(control_plane):
    name = f"cfg-old-{secrets.token_hex(3)}"
    extra = {"profiles": [{"schedulerName": name}], "kubesalvo": SETTINGS}
    with pytest.raises(StartError, match="unknown field"):
        start_kube_scheduler(control_plane, extra=extra, name=name, timeout=30)


def test_kubesalvo_run_warns_of_the_deprecated_block_in_its_log_and_metrics(
    control_plane, tmp_path
):
    name = f"cfg-run-{secrets.token_hex(3)}"
    config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        f"kubesalvo:\n  maxBurstPods: 50\nprofiles:\n- schedulerName: {name}\n"
    )
    ours = SchedulerProcess(tmp_path, control_plane.kubeconfig, config)
    try:
        ours.wait_ready()
        assert ours.metric("kubesalvo_config_deprecated_fields", field="kubesalvo") == 1.0
        warnings = [
            line
            for line in ours.log.read_text().splitlines()
            if '"level": "warning"' in line and "top-level `kubesalvo:` block is deprecated" in line
        ]
        assert warnings, ours.tail()
    finally:
        ours.kill()
