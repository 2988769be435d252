"""The pure parts of the binary build: versions, cache key, flags and error messages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubesalvo.sched.cluster import build

GO_MOD = """module example.local/x

go 1.26

require k8s.io/kubernetes v1.34.4

require (
	github.com/google/btree v1.1.3 // indirect
	go.etcd.io/etcd/server/v3 v3.6.16
)
"""


def test_module_version_reads_single_and_block_requires() -> None:
    assert build.module_version(GO_MOD, "k8s.io/kubernetes") == "v1.34.4"
    assert build.module_version(GO_MOD, "go.etcd.io/etcd/server/v3") == "v3.6.16"


def test_module_version_names_the_missing_module() -> None:
    with pytest.raises(build.BuildError, match=r"does not require sigs\.k8s\.io/kwok"):
        build.module_version(GO_MOD, "sigs.k8s.io/kwok")


def test_cache_key_comes_from_the_shipped_go_modules() -> None:
    versions = build.shipped_versions()
    assert versions.kubernetes.startswith("v1.34.")
    assert versions.etcd.startswith("v3.6.")
    assert versions.key == f"k8s-{versions.kubernetes}_etcd-{versions.etcd}_kwok-v0.8.0"


def test_cache_root_follows_kubesalvo_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBESALVO_CACHE", str(tmp_path))
    versions = build.Versions("v1.34.4", "v3.6.16", "v0.8.0")
    assert build.bin_dir(versions) == tmp_path / "bin" / versions.key


def test_folder_missing_a_binary_or_stage_is_incomplete(tmp_path: Path) -> None:
    for name in build.BINARIES:
        (tmp_path / name).write_text("")
    (tmp_path / "stages").mkdir()
    for stage in build.STAGE_FILES:
        (tmp_path / "stages" / f"{stage}.yaml").write_text("")
    assert build.is_complete(tmp_path)
    (tmp_path / "stages" / "pod-ready.yaml").unlink()
    assert not build.is_complete(tmp_path)


def test_version_ldflags_set_both_version_packages() -> None:
    flags = build.version_ldflags("v1.34.4")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.34.4" in flags
        assert f"-X {package}.gitMajor=1" in flags
        assert f"-X {package}.gitMinor=34" in flags


def test_build_steps_compile_every_binary_into_the_output(tmp_path: Path) -> None:
    versions = build.Versions("v1.34.4", "v3.6.16", "v0.8.0")
    steps = build.build_steps("go", tmp_path / "module", tmp_path / "out", versions)
    etcd, kubernetes, kwok = steps
    assert etcd.cwd == tmp_path / "module" / "etcd"
    assert etcd.argv[-3:] == ["-o", str(tmp_path / "out" / "etcd"), "."]
    assert [f"k8s.io/kubernetes/cmd/{c}" for c in build.KUBERNETES_COMMANDS] == kubernetes.argv[
        -len(build.KUBERNETES_COMMANDS) :
    ]
    assert kwok.argv[1:] == ["install", "sigs.k8s.io/kwok/cmd/kwok@v0.8.0"]
    assert kwok.env["GOBIN"] == str(tmp_path / "out")
    assert all("-trimpath" in step.env["GOFLAGS"] for step in steps)


def test_missing_go_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.BuildError, match="`go` is not on PATH"):
        build.find_go()


def test_unreachable_proxy_is_named() -> None:
    step = build.Step("kwok v0.8.0", ["go", "install"], Path("."), {})
    output = (
        "go: sigs.k8s.io/kwok/cmd/kwok@v0.8.0: Get "
        '"https://proxy.golang.org/sigs.k8s.io/kwok/@v/v0.8.0.info": dial tcp: '
        "lookup proxy.golang.org: no such host"
    )
    message = build.explain_failure(step, output)
    assert "the Go module proxy cannot be reached" in message
    assert "no such host" in message


def test_compile_error_is_shown_as_is() -> None:
    step = build.Step("etcd v3.6.16", ["go", "build"], Path("."), {})
    message = build.explain_failure(step, "./main.go:9:2: undefined: etcdmain.Mian")
    assert message == "building etcd v3.6.16 failed:\n./main.go:9:2: undefined: etcdmain.Mian"


def test_each_shipped_release_has_its_own_module_and_cache_key() -> None:
    modules = build.kubernetes_modules()
    default, *others = modules
    assert default == build.shipped_versions().kubernetes
    assert modules[default] == build.source_dir()
    assert "v1.37.2" in others
    newest = build.shipped_versions(kubernetes="v1.37.2")
    assert newest.kubernetes == "v1.37.2" and newest.etcd == build.shipped_versions().etcd
    assert newest.key != build.shipped_versions().key
    assert build.kubernetes_module("v1.37.2") == build.source_dir() / "k8s-v1.37"
    assert (build.kubernetes_module("v1.37.2") / "go.sum").is_file()


@pytest.mark.parametrize("spelling", ["v1.37.2", "1.37.2", "1.37", "v1.37"])
def test_a_release_is_named_with_or_without_v_and_patch(spelling: str) -> None:
    assert build.shipped_versions(kubernetes=spelling).kubernetes == "v1.37.2"


@pytest.mark.parametrize("spelling", ["v1.3", "1.99.0", "latest"])
def test_an_unshipped_release_is_refused_naming_the_shipped_ones(spelling: str) -> None:
    with pytest.raises(build.BuildError, match=r"no shipped module pins it; accepted: v1\.34"):
        build.shipped_versions(kubernetes=spelling)


def test_kubernetes_is_built_in_its_own_module_and_etcd_in_the_shared_one(
    tmp_path: Path,
) -> None:
    versions = build.Versions("v1.37.2", "v3.6.16", "v0.8.0")
    module = tmp_path / "module"
    etcd, kubernetes, _ = build.build_steps(
        "go", module, tmp_path / "out", versions, module / "k8s-v1.37"
    )
    assert etcd.cwd == module / "etcd"
    assert kubernetes.cwd == module / "k8s-v1.37"
    assert "gitVersion=v1.37.2" in " ".join(kubernetes.argv)


def test_release_of_a_binary_folder_comes_from_its_key() -> None:
    versions = build.Versions("v1.37.2", "v3.6.16", "v0.8.0")
    assert build.release_of(build.bin_dir(versions)) == "v1.37.2"
    with pytest.raises(build.BuildError, match="not a binary folder"):
        build.release_of(Path("/tmp/elsewhere"))


def test_a_cached_build_replaces_its_folder_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "bin" / "tool-v1"
    folder.mkdir(parents=True)
    (folder / "old").write_text("old")

    def broken(staging: Path) -> None:
        (staging / "tool").write_text("half")
        raise build.BuildError("compile failed")

    with pytest.raises(build.BuildError):
        build.install_folder(folder, broken, lambda f: (f / "tool").is_file())
    assert sorted(p.name for p in folder.iterdir()) == ["old"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tool-v1"]  # no staging left

    build.install_folder(folder, lambda s: (s / "tool").write_text("new"), lambda f: True)
    assert sorted(p.name for p in folder.iterdir()) == ["tool"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tool-v1"]


def test_a_cached_build_keeps_a_complete_folder_another_build_put_there_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bin" / "tool-v1"
    real_rename = os.rename

    def raced(src: str, dst: str) -> None:
        Path(dst).mkdir()  # the other session's rename landed between ours and rmtree
        (Path(dst) / "tool").write_text("theirs")
        real_rename(src, dst)

    monkeypatch.setattr(build.os, "rename", raced)
    build.install_folder(folder, lambda s: (s / "tool").write_text("ours"), lambda f: True)
    assert (folder / "tool").read_text() == "theirs"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tool-v1"]
    with pytest.raises(OSError):
        build.install_folder(
            tmp_path / "bin" / "other", lambda s: (s / "tool").write_text("x"), lambda f: False
        )
