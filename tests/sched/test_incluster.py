"""``kubesalvo run`` with in-cluster credentials and no kubeconfig at all.

The test lays out what the kubelet mounts in a pod (the ServiceAccount's token, the
cluster CA and the namespace under var/run/secrets/kubernetes.io/serviceaccount) in a
temporary root, from a real TokenRequest, sets KUBERNETES_SERVICE_HOST/PORT to the real
API server, and points the scheduler at the root with $KUBESALVO_INCLUSTER_ROOT or
``--incluster-root``. The account holds deploy/base's rules; the scheduler binds a pod.
"""

from __future__ import annotations

import secrets
import time
from urllib.parse import urlsplit

import pytest

from kubesalvo.sched.client import INCLUSTER_ROOT_ENV
from tests.helpers.deploy import (
    bind_rules,
    delete_cluster_rbac,
    get_pod,
    node_pool,
    pool_pod,
    scheduler_rules,
    service_account_token,
    write_service_account,
)
from tests.sched.test_app import ELECTION_OFF, SchedulerProcess

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("how", ["environment", "option"])
def test_the_scheduler_runs_in_cluster_with_no_kubeconfig(control_plane, namespace, tmp_path, how):
    cluster_rules, _ = scheduler_rules(control_plane)
    role = bind_rules(control_plane, namespace, "kubesalvo", cluster_rules)
    process = None
    try:
        token = service_account_token(control_plane, namespace, "kubesalvo")
        root = tmp_path / "root"
        write_service_account(root, token, control_plane.ca_file.read_bytes(), namespace)
        server = urlsplit(control_plane.server)
        env = {
            "KUBERNETES_SERVICE_HOST": str(server.hostname),
            "KUBERNETES_SERVICE_PORT": str(server.port),
            # Nothing else to fall back on.
            "KUBECONFIG": str(tmp_path / "no-such-kubeconfig"),
            "HOME": str(tmp_path),
        }
        args: tuple[str, ...] = ()
        if how == "environment":
            env[INCLUSTER_ROOT_ENV] = str(root)
        else:
            args = ("--incluster-root", str(root))
        # A profile of its own: under the default name it would also bind other tests'
        # pending pods on the session's shared control plane.
        name = f"incluster-{secrets.token_hex(3)}"
        config = ELECTION_OFF + f"profiles:\n- schedulerName: {name}\n"
        process = SchedulerProcess(tmp_path, None, config, "incluster", args=args, env=env)
        process.wait_ready()
        pool = f"incluster-{secrets.token_hex(3)}"
        node = node_pool(control_plane, pool, 1)[0]
        pod = pool_pod(namespace, "p", pool)
        pod["spec"]["schedulerName"] = name
        control_plane.create([pod])
        deadline = time.monotonic() + 40
        while ((get_pod(control_plane, namespace, "p") or {}).get("spec") or {}).get(
            "nodeName"
        ) != node:
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.25)
        log = process.log.read_text()
        assert f"in-cluster credentials of a service account in {namespace}" in log
        assert f"kubesalvo starting against {control_plane.server}" in log
    finally:
        if process is not None:
            process.kill()
        delete_cluster_rbac(control_plane, role)
