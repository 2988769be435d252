"""Why a pod is pending, or where it went and why: ``/debug/explain`` and ``kubesalvo explain``.

The scheduler's debug server answers ``/debug/explain?pod=NAMESPACE/NAME`` with JSON:

* for a **pending** pod, its last attempt's FailedScheduling message and the number of
  nodes per failure reason (exactly what the burst kernel reported), and where it waits
  in the queue;
* for a **placed** pod, its node and the top nodes with each score plugin's weighted
  score, and whether its node was drawn at random among several nodes sharing the best
  total score (``lastAttempt.tiedNodes``: how many; kube-scheduler draws the same way);
  when BurstPacking decided otherwise than the kernel alone, ``lastAttempt.burstPacking``
  holds the node the kernel chose (``kernelNode``). The burst kernel returns only each
  pod's total, so the per-plugin breakdown is computed by ``kubesalvo.core.pernode``
  (kube-scheduler's plugins written plainly) for that one pod against the cluster as it
  is now, the pod itself left out. The answer says
  so (``scoresFrom``): the cluster has moved since the burst, so the per-node choice
  may differ from the node the pod got.

A member of a gang (``podGroup`` or ``scheduling.x-k8s.io/pod-group``) also gets ``gang``:
its minimum and where it comes from (label or PodGroup), its members known, pending and
bound, how long it has waited and its timeout, and its PodGroup's phase.

``kubesalvo explain ns/name`` fetches that page from a running scheduler (on this machine,
or through ``kubectl port-forward``) and prints it as tables. It sends the debug pages'
token (``debug_token``): read from ``--debug-token-file``, else ``$KUBESALVO_DEBUG_TOKEN``,
else the file ``kubesalvo run`` writes by default for the port of ``--debug-url``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesalvo.core.plugins import dynamic_resources
from kubesalvo.core.plugins.coscheduling.gang import gang_of, min_available
from kubesalvo.core.plugins.names import QOS_AWARE
from kubesalvo.core.plugins.qos_aware import go_duration
from kubesalvo.sched.debug_token import default_token_file, read_token
from kubesalvo.sched.informers import to_api_dict

if TYPE_CHECKING:
    from kubesalvo.sched.app import Scheduler

__all__ = ["configure", "explain_pod", "main", "plugin_scores"]

TOP_NODES = 5
SCORES_FROM = (
    "kubesalvo.core.pernode, for this pod alone against the current cluster "
    "(the burst kernel reports only each pod's total score)"
)


def pod_devices(scheduler: Scheduler, pod: Any, core: Any) -> Any:
    """The DynamicResources cycle state (core/dra/pod.PodDevices) of a pod with resource
    claims, its own reservations left out, for the per-node evaluator; None for a pod
    without claims, or without the plugin's runtime. Call it on the event loop, where the
    claims' store and the reservations change."""
    if scheduler.cycle.devices is None or core is None or not pod.spec.resource_claims:
        return None
    timeout = core.args_of(dynamic_resources.NAME).filter_timeout_seconds
    return scheduler.cycle.devices.prefilter_left_out(scheduler.forms.api(pod), timeout)


def plugin_scores(
    pod: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    namespaces: Sequence[Mapping[str, Any]],
    profile: Any,
    top: int = TOP_NODES,
    workloads: Sequence[Mapping[str, Any]] = (),
    storage: Any = None,
    devices: Any = None,
) -> dict[str, Any]:
    """The per-node filter and score of ``pod``: the top nodes with per-plugin scores.
    ``workloads`` (Services and controllers) give default spreading its selectors, as the
    burst had them; ``storage`` (core/volumes.StorageObjects) the volume filters' objects;
    ``devices`` (core/dra/pod.PodDevices) its claims' DynamicResources state, which
    that plugin's Filter and Score read as in the burst."""
    from kubesalvo.core.pernode.evaluator import PodEvaluator

    uid = (pod.get("metadata") or {}).get("uid")
    others = [p for p in pods if (p.get("metadata") or {}).get("uid") != uid]
    unbound = {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}}
    evaluator = PodEvaluator(nodes, others, namespaces, profile, workloads)
    if storage is not None:
        evaluator.storage = storage
    if devices is not None:
        evaluator.devices[uid or ""] = devices
    outcome = evaluator.evaluate(unbound)
    scores = evaluator.scores_for(unbound, outcome.feasible)
    ranked = sorted(scores.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    return {
        "feasibleNodes": len(outcome.feasible),
        "reasons": outcome.reason_counts(),
        "topNodes": [
            {"node": name, "total": sum(plugins.values()), "plugins": plugins}
            for name, plugins in ranked[:top]
        ],
    }


def min_available_or_none(pod: Mapping[str, Any]) -> int | None:
    try:
        return min_available(pod)
    except ValueError:
        return None


def render_gang(gang: Mapping[str, Any]) -> str:
    """One line on a gang's state."""
    text = (
        f"  gang {gang['group']}: minAvailable {gang.get('minAvailable') or 'all in a burst'}"
        f" (from {gang['minimumFrom']}), {gang['members']} members known, "
        f"{gang['pending']} pending, {gang['bound']} bound"
    )
    if "waitingSeconds" in gang:
        text += f", waiting {gang['waitingSeconds']}s of {gang['timeoutSeconds']:.0f}s"
    if "podGroupPhase" in gang:
        text += f", PodGroup phase {gang['podGroupPhase']}"
    return text


async def explain_pod(scheduler: Scheduler, namespace: str, name: str) -> dict[str, Any]:
    """The answer of ``/debug/explain`` for one pod (see the module docstring)."""
    full = f"{namespace}/{name}"
    pod = scheduler.pods.store.get(full)
    attempt = scheduler.cycle.attempts.get(full)
    answer: dict[str, Any] = {"pod": full}
    if pod is None:
        answer["status"] = "unknown"
        answer["message"] = "no such pod in the scheduler's cache (finished or deleted?)"
        return answer
    qos = scheduler.plugins.live.get(QOS_AWARE)
    found = qos.controller_of(namespace, name) if qos is not None else None
    if found is not None:
        controller, totals = found
        answer["qos"] = {
            "controller": str(controller),
            "qos": totals.qos,
            "slo": totals.slo,
            "ttv": go_duration(totals.ttv),
            "waitingPods": totals.waiting_pods,
        }
    group = gang_of(pod)
    if group is not None:
        labelled = min_available_or_none(scheduler.forms.api(pod))
        answer["gang"] = scheduler.cycle.gangs.describe(group, labelled)
    if attempt is not None:
        answer["lastAttempt"] = {
            "profile": attempt.profile,
            "node": attempt.node,
            "message": attempt.message,
            "burstSize": attempt.burst_size,
            "score": attempt.score,
            "tiedNodes": attempt.ties,
            "at": attempt.at,
        }
        if attempt.packed:
            answer["lastAttempt"]["burstPacking"] = {"kernelNode": attempt.kernel_node}
    if not pod.spec.node_name and not scheduler.cache.is_assumed(pod.metadata.uid):
        answer["status"] = "pending"
        where = scheduler.queue.where(pod.metadata.uid)
        answer["queue"] = where.value if where is not None else None
        if attempt is not None:
            answer["message"] = attempt.message
            answer["reasons"] = attempt.reason_counts
        elif pod.spec.scheduler_name not in scheduler.names:
            answer["message"] = f'not ours: spec.schedulerName is "{pod.spec.scheduler_name}"'
        else:
            answer["message"] = "not attempted yet"
        return answer
    node = pod.spec.node_name or scheduler.cache.assumed_node(pod.metadata.uid)
    answer["status"] = "placed"
    answer["node"] = node
    profile = scheduler.config.profile(pod.spec.scheduler_name)
    core = profile.core if profile is not None else None
    nodes = [to_api_dict(n) for n in scheduler.nodes.store.values()]
    pods = [scheduler.forms.api(p) for p in scheduler.pods.store.values() if p.spec.node_name]
    namespaces = [to_api_dict(ns) for ns in scheduler.namespaces.store.values()]
    workloads = scheduler.workloads_of({namespace})
    # The per-node evaluator is plain Python: keep the event loop free while it runs.
    storage = scheduler.cache.state.storage.copy()
    devices = pod_devices(scheduler, pod, core)
    breakdown = await asyncio.to_thread(
        plugin_scores,
        scheduler.forms.api(pod),
        nodes,
        pods,
        namespaces,
        core,
        TOP_NODES,
        workloads,
        storage,
        devices,
    )
    answer.update(breakdown)
    answer["scoresFrom"] = SCORES_FROM
    return answer


# --- the command --------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="NAMESPACE/NAME")
    parser.add_argument(
        "--debug-url",
        default="http://127.0.0.1:10000",
        help="the scheduler's debug server (default: %(default)s)",
    )
    parser.add_argument(
        "--debug-token-file",
        type=Path,
        metavar="PATH",
        help="the token file kubesalvo run wrote (default: $KUBESALVO_DEBUG_TOKEN, else "
        "kubesalvo run's default file for the port of --debug-url)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def debug_token(debug_url: str, token_file: Path | None) -> str | None:
    """The token to send: from ``token_file``, the environment, or the default file (None
    when that default file does not exist: the scheduler's answer then says what is
    missing, or there is no scheduler to ask)."""
    if token_file is None:
        from_env = os.environ.get("KUBESALVO_DEBUG_TOKEN")
        if from_env:
            return from_env
        port = urllib.parse.urlsplit(debug_url).port or 80
        try:
            return read_token(default_token_file(port))
        except FileNotFoundError:
            return None
    return read_token(token_file)


def fetch(
    debug_url: str, pod: str, token: str | None, timeout: float = 60.0
) -> tuple[int, dict[str, Any]]:
    url = f"{debug_url.rstrip('/')}/debug/explain?pod={urllib.parse.quote(pod, safe='/')}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def render(answer: Mapping[str, Any]) -> str:
    """The answer as text for a terminal."""
    lines = [f"pod {answer['pod']}: {answer.get('status')}"]
    qos = answer.get("qos")
    if qos:
        lines.append(
            f"  QosAware: {qos['controller']} QOS/SLO {qos['qos']:.2f}/{qos['slo']:.2f}, "
            f"TTV {qos['ttv']} (lowest first), {qos['waitingPods']} pod(s) waiting"
        )
    if answer.get("gang"):
        lines.append(render_gang(answer["gang"]))
    if answer.get("status") == "pending":
        lines.append(f"  queue: {answer.get('queue')}")
        lines.append(f"  {answer.get('message', '')}")
        packing = packing_line(answer.get("lastAttempt") or {})
        if packing:
            lines.append(f"  {packing}")
        reasons = answer.get("reasons") or {}
        if reasons:
            lines.append("  nodes  reason")
            for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {count:>5}  {reason}")
    elif answer.get("status") == "placed":
        lines.append(f"  node: {answer.get('node')}")
        packing = packing_line(answer.get("lastAttempt") or {})
        if packing:
            lines.append(f"  {packing}")
        tie = tie_line(answer.get("lastAttempt") or {})
        if tie:
            lines.append(f"  {tie}")
        top = answer.get("topNodes") or []
        if top:
            plugins = sorted({p for entry in top for p in entry["plugins"]})
            header = ["node", "total", *plugins]
            rows = [
                [entry["node"], str(entry["total"])]
                + [str(entry["plugins"].get(p, 0)) for p in plugins]
                for entry in top
            ]
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
            lines.append(f"  top {len(top)} of {answer.get('feasibleNodes')} feasible nodes:")
            for row in [header, *rows]:
                lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        lines.append(f"  scores from {answer.get('scoresFrom')}")
    else:
        lines.append(f"  {answer.get('message', answer.get('error', ''))}")
    return "\n".join(lines)


def packing_line(attempt: Mapping[str, Any]) -> str:
    """What BurstPacking changed for the pod in its last attempt ("" when nothing)."""
    packing = attempt.get("burstPacking")
    if packing is None:
        return ""
    kernel = packing.get("kernelNode")
    if not attempt.get("node"):
        return f"left out by BurstPacking for more pods of its burst (the kernel chose {kernel})"
    if kernel is None:
        return "placed by BurstPacking (the kernel alone left it out)"
    return f"moved by BurstPacking (the kernel alone chose {kernel})"


def tie_line(attempt: Mapping[str, Any]) -> str:
    """What the last attempt says of a tie: the node drawn among how many ("" when the
    attempt placed nowhere or is not known)."""
    tied = attempt.get("tiedNodes") or 0
    if not attempt.get("node") or tied < 1:
        return ""
    if tied == 1:
        return f"no tie: the only node with the best total score ({attempt.get('score')})"
    return (
        f"tie: drawn at random among {tied} nodes with the best total score "
        f"({attempt.get('score')}), as kube-scheduler draws"
    )


def main(args: argparse.Namespace) -> int:
    if "/" not in args.pod:
        print("kubesalvo explain: give the pod as NAMESPACE/NAME", file=sys.stderr)
        return 2
    try:
        token = debug_token(args.debug_url, args.debug_token_file)
    except OSError as error:
        print(
            f"kubesalvo explain: cannot read the debug pages' token: {error} "
            "(--debug-token-file: the file kubesalvo run wrote)",
            file=sys.stderr,
        )
        return 1
    try:
        status, answer = fetch(args.debug_url, args.pod, token)
    except (urllib.error.URLError, OSError) as error:
        print(f"kubesalvo explain: cannot reach {args.debug_url}: {error}", file=sys.stderr)
        return 1
    if status == 401:
        print(f"kubesalvo explain: {answer.get('error', 'refused (401)')}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2) if args.output == "json" else render(answer))
    return 0 if status == 200 else 1
