"""The agents the extender can serve, by name: ``AGENTS[name]`` is the agent's class.

Each agent is one module of vectorised filters and scores over ClusterState rows (see
``kubesalvo.sched.extender.agent``). Adding an agent is one module and one line here.
"""

from __future__ import annotations

from kubesalvo.sched.extender.agent import Agent
from kubesalvo.sched.extender.agents.congestion import Congestion
from kubesalvo.sched.extender.agents.example import Example
from kubesalvo.sched.extender.agents.policy import Policy
from kubesalvo.sched.extender.agents.safe import Safe

__all__ = ["AGENTS"]

AGENTS: dict[str, type[Agent]] = {
    agent.name: agent for agent in (Congestion, Policy, Safe, Example)
}
