"""The snapshot tool: ``kubesalvo snapshot`` records a live cluster (``record``) into a file
(``files`` reads and writes it) that ``kubesalvo simulate --snapshot`` replays.

A tool beside the runtime: the scheduler itself never imports it.
"""
