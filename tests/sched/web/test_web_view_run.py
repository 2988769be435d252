"""The web view in a real headless Chromium against a real ``kubesalvo run`` on the local
control plane.

The test's own two tainted nodes (2 and 4 cpus) take a pod of 3 cpus, which only the
larger one fits, then one of 2.5 cpus, which neither fits any more (the larger one is
1.5 cpus short, the smaller one is too small however empty). The overview shows the
pending pod in the unschedulable queue with its message, its controller in the QoS
table with a chart, a gang of two waiting for a third member, and the recent bursts; a
pod created while the page is open appears without a reload. The pending pod's page
shows the FailedScheduling text the API server holds and the larger node closest with
what it lacks; the bound pod's page marks the node the API server says it got and sorts
its table by a clicked column. A preemptor's page names the pod it evicted. A screenshot
of each page is saved for review.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.objects import priority_class
from tests.sched.test_app import CONFIG, SchedulerProcess, kwok_node, pod_scheduled, settled
from tests.sched.test_run_qos import QOS_PROFILE

pytestmark = pytest.mark.integration

TAINT_KEY = "kubesalvo.io/test"
WAIT = 60.0


class Pool:
    """The test's tainted nodes and pods that reach only them."""

    def __init__(self, control_plane: Any, namespace: str) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.name = f"web-{secrets.token_hex(3)}"

    def add_node(self, suffix: str, cpu: str) -> str:
        name = f"{self.name}-{suffix}"
        node = kwok_node(name, self.name, cpu=cpu)
        node["spec"] = {"taints": [{"key": TAINT_KEY, "value": self.name, "effect": "NoSchedule"}]}
        self.control_plane.create([node])
        return name

    def pod(self, name: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels or {}},
            "spec": {
                "schedulerName": "kubesalvo",
                "nodeSelector": {"kubesalvo.io/test-pool": self.name},
                "tolerations": [
                    {
                        "key": TAINT_KEY,
                        "operator": "Equal",
                        "value": self.name,
                        "effect": "NoSchedule",
                    }
                ],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "10Mi"}},
                    }
                ],
            },
        }

    def get(self, name: str) -> dict[str, Any]:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        return self.control_plane.call(lambda client: client.request("GET", path))


@pytest.fixture
def pool(control_plane: Any, namespace: str) -> Iterator[Pool]:
    pool = Pool(control_plane, namespace)
    yield pool

    async def delete(client: Any) -> None:
        for suffix in ("small", "big"):
            try:
                await client.request("DELETE", f"/api/v1/nodes/{pool.name}-{suffix}")
            except Exception as error:
                if getattr(error, "status", None) != 404:
                    raise

    control_plane.call(delete)


def wait_for(browser: Any, css: str, text: str = "", timeout: float = WAIT) -> Any:
    """The first element matching ``css`` (whose text holds ``text``), once there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(driver: Any) -> Any:
        for element in driver.find_elements(By.CSS_SELECTOR, css):
            try:
                if text in element.text:
                    return element
            except Exception:  # replaced by the next poll's drawing: look again
                continue
        return False

    return WebDriverWait(browser, timeout, poll_frequency=0.2).until(
        found, message=f"no {css!r} showing {text!r} within {timeout:.0f}s"
    )


def texts(browser: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [element.text for element in browser.find_elements(By.CSS_SELECTOR, css)]


def test_the_web_view_shows_the_queue_and_each_pods_story_and_updates_live(
    control_plane, namespace, pool, tmp_path, browser, screenshot
):
    small = pool.add_node("small", "2")
    big = pool.add_node("big", "4")
    config = CONFIG.format(max_burst=1000) + QOS_PROFILE
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "web")
    try:
        process.wait_ready()
        control_plane.create([pool.pod("placed", "3")])
        settled(process, WAIT, lambda: bool(pool.get("placed")["spec"].get("nodeName")))
        assert pool.get("placed")["spec"]["nodeName"] == big
        gang = {"podGroup": "trio", "minAvailable": "3"}
        control_plane.create(
            [pool.pod("waiter", "2500m"), *(pool.pod(f"trio-{i}", "100m", gang) for i in range(2))]
        )

        def reported() -> bool:
            condition = pod_scheduled(pool.get("waiter"))
            return condition is not None and condition.get("status") == "False"

        settled(process, WAIT, reported)
        failed_scheduling = pod_scheduled(pool.get("waiter"))["message"]
        ui = f"http://127.0.0.1:{process.debug_port}/ui/"
        # Once with the token: the page keeps it as a cookie, the address loses it.
        browser.get(f"{ui}?token={process.debug_token}")
        assert "token" not in browser.current_url

        # The overview, filtered to the test's namespace.
        browser.get(f"{ui}?namespace={namespace}")
        row = wait_for(browser, f'#queue tr[data-pod="{namespace}/waiter"]', "unschedulable")
        assert failed_scheduling.split(".")[0] in row.text
        wait_for(browser, f'#gangs tr[data-gang="{namespace}/trio"]', "3 (label)")
        wait_for(browser, "#qos tbody tr", f"{namespace}/")
        wait_for(browser, "#qos svg.spark path.qos")
        wait_for(browser, "#bursts tbody tr", "kubesalvo")
        assert texts(browser, "#namespace option:checked") == [f"{namespace} (3)"]
        screenshot("overview")

        # A pod created while the page is open shows up without a reload.
        control_plane.create([pool.pod("newcomer", "8")])
        wait_for(browser, f'#queue tr[data-pod="{namespace}/newcomer"]')
        screenshot("overview-updated")

        # The pending pod: the API server's FailedScheduling text, the closest node first.
        browser.get(f"{ui}pod?pod={namespace}/waiter")
        wait_for(browser, "#verdict", "pending")
        wait_for(browser, "#failed", failed_scheduling)
        closest = wait_for(browser, "#nodes tr.infeasible")
        assert closest.get_attribute("data-node") == big
        assert "Insufficient cpu" in closest.text and "cpu: 1500m short" in closest.text
        too_small = wait_for(browser, f'#nodes tr[data-node="{small}"]')
        assert "cpu: 500m short" in too_small.text and "preemption cannot help" in too_small.text
        wait_for(browser, "#preemption", "none: no node can be freed")
        screenshot("pod-pending")

        # The bound pod: the node the API server says it got, marked; sorting by a column.
        browser.get(f"{ui}pod?pod={namespace}/placed")
        assert wait_for(browser, "#winner").text == big
        chosen = wait_for(browser, "#nodes tr.chosen", "chosen")
        assert chosen.get_attribute("data-node") == big
        wait_for(browser, '#nodes th[data-key="node"]').click()
        wait_for(browser, '#nodes th.sorted[data-key="node"]')
        rows = browser.find_elements("css selector", "#nodes tbody tr")
        nodes = [r.get_attribute("data-node") for r in rows]
        assert len(nodes) > 1 and nodes == sorted(nodes)
        screenshot("pod-placed")
    finally:
        process.kill()


def test_a_preemptors_page_names_its_victim_and_the_node_it_took(
    control_plane, namespace, pool, tmp_path, browser, screenshot
):
    """One node of 2 cpus runs a low-priority pod of 1.5 cpus; a high-priority pod of 1.5
    cpus evicts it and is bound there. Its page names the victim and the node."""
    token = secrets.token_hex(3)
    low, high = f"web-low-{token}", f"web-high-{token}"
    control_plane.create([priority_class(low, 100), priority_class(high, 10_000)])
    solo = pool.add_node("small", "2")
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=1000), "preempt"
    )
    try:
        process.wait_ready()
        victim = pool.pod("victim", "1500m")
        victim["spec"]["priorityClassName"] = low
        control_plane.create([victim])
        settled(process, WAIT, lambda: bool(pool.get("victim")["spec"].get("nodeName")))
        preemptor = pool.pod("preemptor", "1500m")
        preemptor["spec"]["priorityClassName"] = high
        control_plane.create([preemptor])
        settled(process, 120, lambda: pool.get("preemptor")["spec"].get("nodeName") == solo)

        page = f"http://127.0.0.1:{process.debug_port}/ui/pod?pod={namespace}/preemptor"
        browser.get(f"{page}&token={process.debug_token}")  # kept as a cookie
        assert browser.current_url == page
        assert wait_for(browser, "#winner").text == solo
        section = wait_for(browser, "#preemption", f"{namespace}/victim")
        assert solo in section.text
        screenshot("pod-preemptor")
    finally:
        process.kill()
