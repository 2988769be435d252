"""The ``policy`` agent's rule file: typed rules, validated once at start.

A rules file is YAML::

    rules:
      - name: team-a-pool                 # unique, used in failure messages
        podSelector:                      # which pods the rule applies to ({} = all)
          matchLabels: {team: a}
        namespaces: [prod]                # optional: only pods of these namespaces
        requiredNodeSelector:             # nodes the pods must go to
          matchLabels: {pool: a}
        preferredNodeSelector:            # nodes they should go to (scored)
          matchExpressions: [{key: zone, operator: In, values: [z1]}]
        placement: spread                 # pack | spread | none (default none)
        teamLabel: team                   # the pod label naming the team (default team)
        maxPodsPerNode: 3                 # per team, 0 = no limit

Selectors are Kubernetes label selectors (matchLabels, matchExpressions with In, NotIn,
Exists, DoesNotExist). A wrong file is refused with the rule's path and the reason, e.g.
``rules[2].placement: Invalid enum value 'scatter'``.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesalvo.core.label_selectors import (
    InvalidSelector,
    Selector,
    parse_label_selector,
)
from kubesalvo.sched.extender.agent import ArgsError

__all__ = ["Placement", "Rule", "load_rules", "parse_rules"]


class Placement(enum.Enum):
    NONE = "none"
    PACK = "pack"
    SPREAD = "spread"


class Requirement(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[Requirement] = []


class RuleSpec(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    name: str
    pod_selector: LabelSelector
    namespaces: list[str] = []
    required_node_selector: LabelSelector | None = None
    preferred_node_selector: LabelSelector | None = None
    placement: Placement = Placement.NONE
    team_label: str = "team"
    max_pods_per_node: int = 0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must not be empty")
        if self.max_pods_per_node < 0:
            raise ValueError("maxPodsPerNode must be >= 0")


class RulesFile(msgspec.Struct, forbid_unknown_fields=True):
    rules: list[RuleSpec]


class Rule:
    """A validated rule: its selectors parsed into core's selector tuples."""

    def __init__(self, spec: RuleSpec, path: str) -> None:
        self.spec = spec
        self.name = spec.name
        self.pod_selector = _selector(spec.pod_selector, f"{path}.podSelector")
        self.namespaces = frozenset(spec.namespaces)
        self.required = _optional(spec.required_node_selector, f"{path}.requiredNodeSelector")
        self.preferred = _optional(spec.preferred_node_selector, f"{path}.preferredNodeSelector")
        self.placement = spec.placement
        self.team_label = spec.team_label
        self.max_pods_per_node = spec.max_pods_per_node


def _selector(raw: LabelSelector, path: str) -> Selector:
    try:
        return parse_label_selector(msgspec.to_builtins(raw))
    except InvalidSelector as error:
        raise ArgsError(path, str(error)) from None


def _optional(raw: LabelSelector | None, path: str) -> Selector | None:
    return None if raw is None else _selector(raw, path)


def _path(error: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's "reason - at `$.rules[2].placement`" as ("rules[2].placement", reason)."""
    text = str(error)
    reason, sep, where = text.rpartition(" - at `")
    if not sep:
        return "rules", text
    return where.rstrip("`").removeprefix("$.").removeprefix("$") or "rules", reason


def parse_rules(raw: Any) -> list[Rule]:
    """Rules from the YAML document ``raw``; ``ArgsError`` names the bad rule's path
    (``rules[2].placement``) and why."""
    try:
        spec = msgspec.convert(raw, RulesFile, strict=True)
    except msgspec.ValidationError as error:
        where, reason = _path(error)
        raise ArgsError(where, reason) from None
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, rule in enumerate(spec.rules):
        path = f"rules[{index}]"
        if rule.name in seen:
            raise ArgsError(f"{path}.name", f"duplicate rule name {rule.name!r}")
        seen.add(rule.name)
        rules.append(Rule(rule, path))
    return rules


def load_rules(path: str) -> list[Rule]:
    """Read and validate a rules file; ``ArgsError``'s path starts with the file's."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ArgsError(path, f"cannot read the rules file: {error.strerror or error}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ArgsError(path, f"not valid YAML: {error}") from None
    try:
        return parse_rules(raw)
    except ArgsError as error:
        raise ArgsError(f"{path}: {error.path}", error.message) from None
