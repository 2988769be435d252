"""``policy``: operator rules (see ``policy_rules``) as vectorised node masks and scores.

For a pod, every rule whose pod selector (and namespaces) match it applies:

* ``requiredNodeSelector``: nodes whose labels do not match fail (unresolvable:
  preemption cannot change a node's labels);
* ``maxPodsPerNode``: nodes that already hold that many pods of the pod's team (the
  value of its ``teamLabel``) fail (resolvable: preemption can make room);
* ``preferredNodeSelector`` scores matching nodes 1, others 0;
* ``placement: pack`` scores nodes by how many of the team's pods they hold (most
  first), ``spread`` the other way round.

A pod no rule matches is neither filtered nor scored by this agent. Team counts come
from the ClusterState's pods grouped by (namespace, labels): the groups whose labels
carry the team are found once and then summed per row in one pass.
"""

from __future__ import annotations

import time

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.label_selectors import selector_matches
from kubesalvo.core.state import ClusterState
from kubesalvo.sched.extender.agent import Agent, ArgsError, Clock, Filtered, PodInfo
from kubesalvo.sched.extender.agents.node_labels import selector_rows
from kubesalvo.sched.extender.agents.policy_rules import Placement, Rule, load_rules, parse_rules

NAME = "policy"


class PolicyArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    # A YAML rules file (see policy_rules), or the same rules inline.
    rules_file: str = ""
    rules: list[dict[str, object]] | None = None


class Policy(Agent):
    name = NAME
    Args = PolicyArgs

    def __init__(self, args: PolicyArgs, clock: Clock = time.monotonic) -> None:
        super().__init__(args, clock)
        if args.rules_file and args.rules is not None:
            raise ArgsError("args", "give rulesFile or rules, not both")
        if args.rules_file:
            try:
                self.rules = load_rules(args.rules_file)
            except ArgsError as error:
                raise ArgsError("args.rulesFile", str(error)) from None
        elif args.rules is not None:
            try:
                self.rules = parse_rules({"rules": args.rules})
            except ArgsError as error:
                raise ArgsError(f"args.{error.path}", error.message) from None
        else:
            raise ArgsError("args.rulesFile", "the policy agent needs rulesFile or rules")
        # (team label, team) -> (groups scanned so far, ids of the team's groups)
        self._team_groups: dict[tuple[str, str], tuple[int, list[int]]] = {}

    def matching(self, pod: PodInfo) -> list[Rule]:
        return [
            rule
            for rule in self.rules
            if (not rule.namespaces or pod.namespace in rule.namespaces)
            and selector_matches(rule.pod_selector, pod.labels)
        ]

    def team_counts(self, state: ClusterState, label: str, team: str) -> npt.NDArray[np.int64]:
        """Pods of ``team`` per row (any namespace)."""
        scanned, gids = self._team_groups.get((label, team), (0, []))
        for gid in range(scanned, len(state.groups)):
            if state.groups[gid].labels.get(label) == team:
                gids.append(gid)
        self._team_groups[(label, team)] = (len(state.groups), gids)
        return state.group_counts(gids)

    def filter(self, state: ClusterState, pod: PodInfo) -> Filtered:
        codes = np.zeros(state.rows, dtype=np.uint8)
        reasons: list[str] = []
        unresolvable: set[int] = set()
        for rule in self.matching(pod):
            if rule.required is not None:
                failing = ~selector_rows(state, rule.required) & (codes == 0)
                if failing.any():
                    reasons.append(
                        f"node does not match the required node selector of policy rule "
                        f"{rule.name!r}"
                    )
                    codes[failing] = len(reasons)
                    unresolvable.add(len(reasons))
            team = pod.labels.get(rule.team_label)
            if rule.max_pods_per_node and team is not None:
                counts = self.team_counts(state, rule.team_label, team)
                failing = (counts >= rule.max_pods_per_node) & (codes == 0)
                if failing.any():
                    reasons.append(
                        f"node already runs {rule.max_pods_per_node} or more pods of team "
                        f"{team!r} (policy rule {rule.name!r})"
                    )
                    codes[failing] = len(reasons)
        return Filtered(codes, tuple(reasons), frozenset(unresolvable))

    def score(self, state: ClusterState, pod: PodInfo) -> npt.NDArray[np.float64] | None:
        parts: list[npt.NDArray[np.float64]] = []
        for rule in self.matching(pod):
            if rule.preferred is not None:
                parts.append(selector_rows(state, rule.preferred).astype(np.float64))
            team = pod.labels.get(rule.team_label)
            if rule.placement is not Placement.NONE and team is not None:
                counts = self.team_counts(state, rule.team_label, team).astype(np.float64)
                top = counts.max() if len(counts) else 0.0
                packed = counts / top if top > 0 else np.zeros_like(counts)
                parts.append(packed if rule.placement is Placement.PACK else 1.0 - packed)
        if not parts:
            return None
        result: npt.NDArray[np.float64] = np.mean(parts, axis=0)
        return result
