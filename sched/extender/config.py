"""The extender's configuration file, decoded and validated once at start.

::

    apiVersion: kubesalvo.io/v1alpha1
    kind: ExtenderConfiguration
    maxRequestBytes: 4194304         # larger bodies are refused (400)
    agents:
      - name: congestion             # one of the agents in AGENTS
        weight: 2                    # its share of /filter and /prioritize's combined score
        managedResources: []         # if set, the agent acts only on pods naming one
        args: {halfLifeSeconds: 30}  # the agent's own typed arguments

Without a file the agents are ``congestion`` and ``safe`` with weight 1 and default
arguments. A wrong file raises ``ConfigError`` with the field's path and the accepted
values, and ``kubesalvo extender`` exits with code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesalvo.sched.extender.agent import Agent, ArgsError, build_args
from kubesalvo.sched.extender.agents import AGENTS

__all__ = ["ConfigError", "ConfiguredAgent", "ExtenderConfig", "load_config"]

API_VERSION = "kubesalvo.io/v1alpha1"
KIND = "ExtenderConfiguration"
# A names-only request (nodeCacheCapable: true) for 5,000 nodes is about 100 KiB; full
# Node objects (nodeCacheCapable: false) are 5-20 KiB each, so large clusters sending them
# need a larger maxRequestBytes. Anything past the limit is refused before it is read.
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
DEFAULT_AGENTS = ("congestion", "safe")


class ConfigError(ValueError):
    """A refused configuration; the text names the field path and what is accepted."""


class AgentSpec(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    name: str
    weight: int = 1
    managed_resources: list[str] = []
    args: dict[str, Any] = {}


class FileSpec(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    api_version: str = msgspec.field(default=API_VERSION, name="apiVersion")
    kind: str = KIND
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    agents: list[AgentSpec] = msgspec.field(
        default_factory=lambda: [AgentSpec(name=name) for name in DEFAULT_AGENTS]
    )


@dataclass
class ConfiguredAgent:
    """An agent built from the configuration, with how the server combines it."""

    agent: Agent
    weight: int
    managed_resources: frozenset[str]

    @property
    def name(self) -> str:
        return self.agent.name


@dataclass
class ExtenderConfig:
    agents: list[ConfiguredAgent]
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES


def _where(error: msgspec.ValidationError) -> tuple[str, str]:
    text = str(error)
    reason, sep, where = text.rpartition(" - at `")
    if not sep:
        return "", text
    return where.rstrip("`").removeprefix("$.").removeprefix("$"), reason


def _refuse(source: str, path: str, reason: str) -> ConfigError:
    return ConfigError(f"{source}: {path}: {reason}" if path else f"{source}: {reason}")


def build(raw: Any, source: str = "configuration") -> ExtenderConfig:
    """Validate a decoded YAML document and build its agents."""
    if raw is None:
        raw = {}
    try:
        spec = msgspec.convert(raw, FileSpec, strict=True)
    except msgspec.ValidationError as error:
        path, reason = _where(error)
        raise _refuse(source, path, reason) from None
    if spec.api_version != API_VERSION:
        raise _refuse(source, "apiVersion", f"{spec.api_version!r}; accepted: {API_VERSION}")
    if spec.kind != KIND:
        raise _refuse(source, "kind", f"{spec.kind!r}; accepted: {KIND}")
    if spec.max_request_bytes < 1024:
        raise _refuse(source, "maxRequestBytes", "must be at least 1024")
    agents: list[ConfiguredAgent] = []
    seen: set[str] = set()
    for index, entry in enumerate(spec.agents):
        path = f"agents[{index}]"
        kind = AGENTS.get(entry.name)
        if kind is None:
            accepted = ", ".join(sorted(AGENTS))
            raise _refuse(source, f"{path}.name", f"{entry.name!r}; accepted: {accepted}")
        if entry.name in seen:
            raise _refuse(source, f"{path}.name", f"agent {entry.name!r} is listed twice")
        seen.add(entry.name)
        if not 0 <= entry.weight <= 100:
            raise _refuse(source, f"{path}.weight", f"{entry.weight}; accepted: 0 to 100")
        try:
            args = build_args(kind.Args, entry.args)
        except msgspec.ValidationError as error:
            where, reason = _where(error)
            raise _refuse(source, f"{path}.args.{where}".rstrip("."), reason) from None
        try:
            agent = kind(args)
        except ArgsError as error:
            raise _refuse(source, f"{path}.{error.path}", error.message) from None
        agents.append(ConfiguredAgent(agent, entry.weight, frozenset(entry.managed_resources)))
    if not agents:
        raise _refuse(source, "agents", "at least one agent is needed")
    return ExtenderConfig(agents, spec.max_request_bytes)


def load_config(path: str | None) -> ExtenderConfig:
    """The configuration in ``path`` (the defaults when None)."""
    if path is None:
        return build(None, "defaults")
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    return build(raw, path)
