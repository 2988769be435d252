"""Helpers shared by tests in more than one folder (``from tests.helpers.x import ...``).

tests/ is no package and pytest imports test files with ``--import-mode=importlib``, which
names each one after its path from the root (``tests.sched.test_app``) and imports the
folders above it as namespace packages. A regular package here is therefore importable as
``tests.helpers`` under ``python3 -m pytest`` and ``pytest`` alike, and it stays out of the
installed kubesalvo package. Nothing here is collected: no module is named ``test_*``.
"""
