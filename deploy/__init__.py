"""Deployment files shipped with kubesalvo (data only).

``local/`` is the Go module that builds the upstream control-plane binaries for
``kubesalvo cluster``; it ships as package data so that a plain ``pip install .`` can build it.
"""
