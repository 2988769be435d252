"""Build of kubesalvo: maps the source folders to packages and compiles the Cython kernels.

The top-level folders core/ and sched/ install as ``kubesalvo.core`` and ``kubesalvo.sched``
(never as top-level ``core``/``sched``: ``sched`` would shadow the standard library).
deploy/ installs as ``kubesalvo.deploy`` so that ``kubesalvo cluster build`` finds the Go
module in deploy/local/ from a plain ``pip install .`` too. Every ``.pyx`` under core/ is an
extension module; adding a kernel needs no change here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOT = Path(__file__).parent.resolve()
FOLDERS = {"core": "kubesalvo.core", "sched": "kubesalvo.sched", "deploy": "kubesalvo.deploy"}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for folder, name in FOLDERS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            parts = rel.parts[1:]
            pkg = ".".join((name, *parts)) if parts else name
            packages.append(pkg)
            package_dir[pkg] = rel.as_posix()
    return packages, package_dir


def _cython_include() -> str:
    """A folder where ``kubesalvo/core`` points at core/, so that ``cimport`` resolves the
    installed names (``from kubesalvo.core._typedefs cimport ...``) from the source layout."""
    shim = ROOT / "build" / "cython-include"
    pkg = shim / "kubesalvo"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.pxd").touch()
    link = pkg / "core"
    if not link.is_symlink():
        link.symlink_to(ROOT / "core", target_is_directory=True)
    return str(shim)


def _extensions() -> list[Extension]:
    exts = []
    for pyx in sorted((ROOT / "core").rglob("*.pyx")):
        rel = pyx.relative_to(ROOT)
        module = ".".join(("kubesalvo.core", *rel.with_suffix("").parts[1:]))
        exts.append(
            Extension(
                module,
                [rel.as_posix()],
                include_dirs=[numpy.get_include(), "core"],
                depends=sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "core").glob("*.h")),
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"],
            )
        )
    return exts


packages, package_dir = _packages()

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "kubesalvo.core": ["*.pxd", "*.pyx", "*.pyi", "*.h"],
        # The web view's pages, served from the installed package (no build step).
        "kubesalvo.sched.web": ["static/*"],
        "kubesalvo.deploy": [
            "local/*.go",
            "local/go.mod",
            "local/go.sum",
            "local/etcd/*",
            "local/metrics-server/*",
            # One module per further Kubernetes release (``cluster build --kubernetes``).
            "local/k8s-*/*",
        ],
    },
    ext_modules=cythonize(
        _extensions(),
        language_level=3,
        nthreads=int(os.environ.get("KUBESALVO_CYTHON_JOBS", "0")),
        include_path=[_cython_include()],
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ),
    zip_safe=False,
)
