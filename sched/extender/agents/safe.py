"""``safe``: load-aware placement - keep pods off nodes whose real usage is (about to be) high.

Per node and resource (cpu, memory) it keeps the last ``window`` usage samples (see
``usage``: metrics.k8s.io, else node annotations) and predicts

    predicted = mean + k x standard deviation + requests of pods bound since the last sample

The pods bound since the last sample are there because usage samples lag: a burst
placed between two samples would otherwise all see the same idle node. A node fails
when ``(predicted + the pod's request) / allocatable`` passes ``threshold`` for either
resource (a resolvable failure: usage may fall); nodes are scored by the headroom left
under the threshold. A node with no sample yet is neither filtered nor favoured (score
0.5). With no sample anywhere (no metrics API, no annotations) the agent says so once
in the log and filters nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.resources import CPU, MEMORY
from kubesalvo.core.state import ClusterState
from kubesalvo.sched.extender.agent import Agent, Clock, Filtered, PodInfo, RowArray, passes_all
from kubesalvo.sched.extender.agents import usage
from kubesalvo.sched.informers.models import Node, Pod

if TYPE_CHECKING:
    from kubesalvo.sched.client import ApiClient

log = logging.getLogger(__name__)

NAME = "safe"
REASONS = (
    "predicted cpu usage would pass the safe threshold",
    "predicted memory usage would pass the safe threshold",
)
NEUTRAL_SCORE = 0.5


class SafeArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    threshold: float = 0.8  # fraction of allocatable
    k: float = 1.0  # standard deviations added to the mean
    window: int = 10  # samples kept per node
    sample_seconds: float = 15.0  # metrics.k8s.io polling period
    use_metrics_api: bool = True
    cpu_annotation: str = usage.CPU_ANNOTATION
    memory_annotation: str = usage.MEMORY_ANNOTATION

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError("threshold must be in (0, 1]")
        if self.k < 0:
            raise ValueError("k must be >= 0")
        if not 1 <= self.window <= 1000:
            raise ValueError("window must be between 1 and 1000")
        if self.sample_seconds <= 0:
            raise ValueError("sampleSeconds must be > 0")


def _pod_usage(pod: Pod) -> tuple[float, float]:
    requests = PodInfo(pod).requests  # the same request arithmetic as the incoming pod
    return float(requests.get(CPU, 0)), float(requests.get(MEMORY, 0))


class Safe(Agent):
    name = NAME
    Args = SafeArgs

    def __init__(self, args: SafeArgs, clock: Clock = time.monotonic) -> None:
        super().__init__(args, clock)
        w = args.window
        self.samples = RowArray(np.float64, (w, 2))  # ring of (cpu milli, memory bytes)
        self.count = RowArray(np.int32)  # samples held (<= window)
        self.next = RowArray(np.int32)  # ring position of the next sample
        self.generation = RowArray(np.int64)  # samples taken so far (ring or not)
        self.since = RowArray(np.float64, (2,))  # requests bound since the last sample
        # mean + k x std of each row's window, kept per sample so that a request reads one
        # vector instead of reducing rows x window samples twice
        self.baseline = RowArray(np.float64, (2,))
        self._annotation_text: dict[str, tuple[str | None, str | None]] = {}
        # uid -> (node, cpu, memory, generation): pods bound that may count in ``since``
        self._recent: dict[str, tuple[str, float, float, int]] = {}
        self.metrics_live = False
        self._warned_no_source = False
        self._warned: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    # --- samples ----------------------------------------------------------------------

    def add_sample(self, row: int, cpu: float, memory: float) -> None:
        samples = self.samples.ensure(row + 1)
        position = int(self.next.ensure(row + 1)[row])
        samples[row, position] = (cpu, memory)
        self.next.data[row] = (position + 1) % self.args.window
        count = self.count.ensure(row + 1)
        count[row] = min(self.args.window, count[row] + 1)
        # The ring fills from position 0, so the first ``count`` positions hold samples.
        window = samples[row, : count[row]]
        self.baseline.ensure(row + 1)[row] = window.mean(axis=0) + self.args.k * window.std(axis=0)
        self.generation.ensure(row + 1)[row] += 1
        self.since.ensure(row + 1)[row] = 0.0

    def predicted(self, state: ClusterState) -> tuple[npt.NDArray[np.float64], np.ndarray]:
        """(rows x 2 predicted usage, rows with samples)."""
        rows = state.rows
        return self.baseline.view(rows) + self.since.view(rows), self.count.view(rows) > 0

    # --- answers ----------------------------------------------------------------------

    def _no_source(self, state: ClusterState) -> bool:
        if self.count.view(state.rows).any():
            return False
        if not self._warned_no_source:
            self._warned_no_source = True
            log.warning(
                "safe: no node usage known (metrics.k8s.io %s and no node has the %s / %s "
                "annotations): filtering nothing until some usage arrives",
                "unreachable" if self.args.use_metrics_api else "not used",
                self.args.cpu_annotation,
                self.args.memory_annotation,
            )
        return True

    def _ratios(self, state: ClusterState, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        predicted, known = self.predicted(state)
        request = np.array([pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)], np.float64)
        allocatable = state.allocatable[: state.rows, :2].astype(np.float64)
        after = predicted + request
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(allocatable > 0, after / allocatable, np.where(after > 0, np.inf, 0))
        return ratios, known

    def filter(self, state: ClusterState, pod: PodInfo) -> Filtered:
        if self._no_source(state):
            return passes_all(state)
        ratios, known = self._ratios(state, pod)
        over = (ratios > self.args.threshold) & known[:, None]
        codes = np.zeros(state.rows, dtype=np.uint8)
        codes[over[:, 1]] = 2
        codes[over[:, 0]] = 1
        return Filtered(codes, REASONS)

    def score(self, state: ClusterState, pod: PodInfo) -> npt.NDArray[np.float64] | None:
        if self._no_source(state):
            return None
        ratios, known = self._ratios(state, pod)
        # the larger of two columns: ``max(axis=1)`` costs ~50 times more over rows of two
        worst = np.maximum(ratios[:, 0], ratios[:, 1])
        headroom = np.clip((self.args.threshold - worst) / self.args.threshold, 0, 1)
        result: npt.NDArray[np.float64] = np.where(known, headroom, NEUTRAL_SCORE)
        return result

    # --- the feed ---------------------------------------------------------------------

    def on_node(self, state: ClusterState, row: int, node: Node) -> None:
        annotations = node.metadata.annotations
        text = (
            annotations.get(self.args.cpu_annotation),
            annotations.get(self.args.memory_annotation),
        )
        name = node.metadata.name
        if self._annotation_text.get(name) == text:
            return
        self._annotation_text[name] = text
        if self.metrics_live:
            return
        found = usage.from_annotations(
            annotations, self.args.cpu_annotation, self.args.memory_annotation
        )
        if isinstance(found, str):
            if name not in self._warned:
                self._warned.add(name)
                log.warning("safe: node %s: %s; its samples are ignored", name, found)
            return
        if found is not None:
            self.add_sample(row, found[0], found[1])

    def on_node_removed(self, state: ClusterState, row: int) -> None:
        for array in (
            self.samples,
            self.count,
            self.next,
            self.generation,
            self.since,
            self.baseline,
        ):
            array.reset(row)
        name = state.names[row] if row < len(state.names) else None
        if name is not None:
            self._annotation_text.pop(name, None)

    def _bound(self, state: ClusterState, row: int, pod: Pod) -> None:
        uid = pod.metadata.uid
        if uid in self._recent:
            return
        node = state.names[row]
        if node is None:
            return
        cpu, memory = _pod_usage(pod)
        self._recent[uid] = (node, cpu, memory, int(self.generation.ensure(row + 1)[row]))
        since = self.since.ensure(row + 1)
        since[row] += (cpu, memory)

    def on_bound(self, state: ClusterState, row: int, uid: str, at: float) -> None:
        # The bind verb does not carry the pod's requests: the watch adds them moments later.
        return

    def on_pod(self, state: ClusterState, old: Pod | None, new: Pod | None, live: bool) -> None:
        if new is not None and new.spec.node_name and live:
            row = state.row_of.get(new.spec.node_name)
            if row is not None:
                self._bound(state, row, new)
            return
        if new is None and old is not None:
            entry = self._recent.pop(old.metadata.uid, None)
            if entry is None:
                return
            node, cpu, memory, generation = entry
            row = state.row_of.get(node)
            # Only while no sample was taken since its binding (a sample includes it).
            if row is not None and generation == self.generation.ensure(row + 1)[row]:
                since = self.since.data
                since[row] = np.maximum(since[row] - (cpu, memory), 0)

    # --- metrics.k8s.io -----------------------------------------------------------------

    async def start(self, client: ApiClient | None, state: ClusterState) -> None:
        if client is not None and self.args.use_metrics_api:
            self._task = asyncio.create_task(self._poll(client, state), name="safe-metrics")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _poll(self, client: ApiClient, state: ClusterState) -> None:
        reported = False
        while True:
            try:
                response = await client.request("GET", usage.NODE_METRICS_PATH, timeout=10)
                found = usage.parse_node_metrics(response.body)
            except Exception as error:
                if self.metrics_live or not reported:
                    log.warning(
                        "safe: metrics.k8s.io not usable (%s): using the node annotations %s / %s",
                        error,
                        self.args.cpu_annotation,
                        self.args.memory_annotation,
                    )
                    reported = True
                self.metrics_live = False
            else:
                if not self.metrics_live:
                    log.info("safe: reading node usage from metrics.k8s.io")
                self.metrics_live = True
                for name, (cpu, memory) in found.items():
                    row = state.row_of.get(name)
                    if row is not None:
                        self.add_sample(row, cpu, memory)
            await asyncio.sleep(self.args.sample_seconds)
