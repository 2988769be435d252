"""The fault-injecting proxy (``proxy``): a test tool put in front of a real API server.

A tool beside the runtime: the scheduler itself never imports it.
"""
