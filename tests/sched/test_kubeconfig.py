"""kubectl's order for credentials: --kubeconfig, then $KUBECONFIG's files merged with the
first file winning, then ~/.kube/config, then in-cluster; and the loaded credentials that
follow from it (``load_credentials`` with an explicit environment, no cluster needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kubesalvo.sched.client import CredentialsError, load_credentials
from kubesalvo.sched.kubeconfig import choose_kubeconfig, first_current_context


def kubeconfig(
    path: Path,
    *,
    users: dict[str, str] | None = None,
    contexts: dict[str, str] | None = None,
    current: str | None = None,
    server: str = "https://127.0.0.1:6443",
) -> Path:
    """A kubeconfig with one cluster ``local``, ``users`` (name -> token) and ``contexts``
    (name -> user name)."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server}}],
        "users": [{"name": n, "user": {"token": t}} for n, t in (users or {}).items()],
        "contexts": [
            {"name": n, "context": {"cluster": "local", "user": u}}
            for n, u in (contexts or {}).items()
        ],
    }
    if current is not None:
        document["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


def home_with_config(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    kubeconfig(
        home / ".kube" / "config", users={"u": "home-token"}, contexts={"c": "u"}, current="c"
    )
    return home


def test_the_kubeconfig_flag_comes_before_the_environment_and_home(tmp_path):
    home = home_with_config(tmp_path)
    listed = kubeconfig(tmp_path / "listed", users={"u": "t"}, contexts={"c": "u"}, current="c")
    env = {"HOME": str(home), "KUBECONFIG": str(listed)}
    choice = choose_kubeconfig(str(tmp_path / "flag"), env)
    assert choice.files == (str(tmp_path / "flag"),)
    assert choice.origin == "--kubeconfig"


def test_kubeconfig_lists_existing_files_in_order_and_skips_missing_and_repeated(tmp_path):
    first = kubeconfig(tmp_path / "a", current="c")
    second = kubeconfig(tmp_path / "b")
    listed = os.pathsep.join([str(tmp_path / "missing"), str(first), "", str(second), str(first)])
    choice = choose_kubeconfig(
        None, {"HOME": str(home_with_config(tmp_path)), "KUBECONFIG": listed}
    )
    assert choice.files == (str(first), str(second))
    assert choice.origin == "$KUBECONFIG"


def test_a_kubeconfig_variable_naming_only_missing_files_means_in_cluster_not_home(tmp_path):
    home = home_with_config(tmp_path)
    choice = choose_kubeconfig(None, {"HOME": str(home), "KUBECONFIG": str(tmp_path / "nope")})
    assert choice.in_cluster
    assert "KUBECONFIG" in choice.describe()


def test_home_kube_config_is_used_when_kubeconfig_is_unset_or_empty(tmp_path):
    home = home_with_config(tmp_path)
    for env in ({"HOME": str(home)}, {"HOME": str(home), "KUBECONFIG": ""}):
        choice = choose_kubeconfig(None, env)
        assert choice.files == (str(home / ".kube" / "config"),)
        assert choice.origin == "~/.kube/config"


def test_nothing_found_means_in_cluster_credentials(tmp_path):
    choice = choose_kubeconfig(None, {"HOME": str(tmp_path)})
    assert choice.in_cluster
    assert choice.describe().startswith("in-cluster service account")


def test_the_first_file_that_sets_current_context_wins(tmp_path):
    empty = kubeconfig(tmp_path / "a")
    first = kubeconfig(tmp_path / "b", current="first")
    later = kubeconfig(tmp_path / "c", current="later")
    assert first_current_context((str(empty), str(first), str(later))) == "first"
    assert first_current_context((str(empty),)) is None


def test_credentials_from_kubeconfig_merge_with_the_first_file_winning_per_name(tmp_path):
    # The first file names the context and its user; the second holds the cluster, a user
    # of the same name with another token, and a current-context of its own.
    first = kubeconfig(
        tmp_path / "a", users={"admin": "first-token"}, contexts={"ctx": "admin"}, current="ctx"
    )
    second = kubeconfig(
        tmp_path / "b",
        users={"admin": "second-token", "other": "other-token"},
        contexts={"ctx": "other", "second": "other"},
        current="second",
        server="https://127.0.0.2:6443",
    )
    env = {"HOME": str(tmp_path), "KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    credentials = load_credentials(environ=env)
    assert credentials.token == "first-token"
    assert credentials.server == "https://127.0.0.1:6443"
    assert credentials.source == f"{first}{os.pathsep}{second} ($KUBECONFIG)"


def test_credentials_come_from_home_kube_config_without_flag_or_variable(tmp_path):
    credentials = load_credentials(environ={"HOME": str(home_with_config(tmp_path))})
    assert credentials.token == "home-token"
    assert credentials.source.endswith("(~/.kube/config)")


def test_a_missing_kubeconfig_flag_file_is_an_error_naming_it(tmp_path):
    home = home_with_config(tmp_path)
    with pytest.raises(CredentialsError, match="missing does not exist"):
        load_credentials(str(tmp_path / "missing"), environ={"HOME": str(home)})


def test_without_any_source_in_cluster_is_tried_and_its_failure_named(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(CredentialsError, match=r"^in-cluster service account"):
        load_credentials(environ={"HOME": str(tmp_path)}, incluster_root=str(tmp_path))
