"""A web view of the live scheduler: its queue, QoS against SLO, gangs, recent bursts, and
for each pod where it went or why not, node by node.

Served under ``/ui/`` on the debug port, and on the secure port (behind its delegated
authentication) when ``kubesalvo run --web-view-on-secure-port`` asks for it. See ``view``
for the routes, ``overview`` and ``verdicts`` for the data, ``static/`` for the pages.
"""

from kubesalvo.sched.web.view import PREFIX, WebView

__all__ = ["PREFIX", "WebView"]
