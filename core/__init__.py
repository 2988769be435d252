"""kubesalvo.core: node-state matrices, pod encoding and the compiled placement kernels.

Nothing in this package does I/O (no sockets, no asyncio, no logging setup); the runtime in
``kubesalvo.sched`` feeds it objects and acts on its answers. An import-linter contract in CI
holds that line.
"""
