"""``kubesalvo extender``: kube-scheduler's HTTP extender protocol, answered by agents.

``wire`` holds the protocol's types, ``agent`` what an agent is, ``agents`` the agents
(congestion, policy, safe, example), ``config`` the configuration file, ``feed`` the
ClusterState the agents read (informers and request nodes), ``combine`` how several
agents answer one request, ``server`` the HTTP routes, ``service`` the running process
and ``cli`` the command.
"""
