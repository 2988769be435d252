"""kubesalvo.sched: the runtime around the compiled core.

Informers, queue, cache, the burst cycle, binder, events, leader election, the HTTP
servers, the extender, the local control plane (``cluster``) and the command line.
"""
