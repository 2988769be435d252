"""helm's build: one `go install` of a pinned release into a cache folder of its own."""

from __future__ import annotations

import subprocess

from kubesalvo.sched.cluster import build
from tests.helpers.helm import helm_binary


def test_helms_cache_folder_is_keyed_by_its_release(tmp_path):
    path = build.helm_binary(tmp_path)
    assert path == tmp_path / "bin" / f"helm-{build.HELM_VERSION}" / "helm"
    assert path.parent != build.bin_dir(root=tmp_path)  # never the control plane's folder


def test_helm_is_installed_from_the_go_module_proxy_at_the_pinned_release(tmp_path):
    step = build.helm_step("go", tmp_path)
    assert step.argv[:2] == ["go", "install"]
    assert step.argv[-1] == f"helm.sh/helm/v4/cmd/helm@{build.HELM_VERSION}"
    assert step.env["GOBIN"] == str(tmp_path)
    # The release's own version in `helm version`, as helm's release builds set it.
    ldflags = step.argv[step.argv.index("-ldflags") + 1]
    assert f"internal/version.version={build.HELM_VERSION}" in ldflags


def test_the_built_helm_reports_the_pinned_release():
    done = subprocess.run(
        [str(helm_binary()), "version", "--short"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(build.HELM_VERSION)
