"""Reading the node's images from ``crictl images -o json``: the real output's shape, a
real executable in the place of crictl, and every way the call can fail (each a
``ListError`` with one line saying what, never another exception)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from kubesalvo.sched.image_reporter.crictl import ListError, list_images, parse_images
from tests.sched.image_reporter.fake_crictl import REAL_IMAGES, REAL_OUTPUT, FakeCrictl


def test_crictls_real_output_gives_names_digests_and_sizes() -> None:
    assert parse_images(REAL_OUTPUT) == REAL_IMAGES


def test_an_empty_runtime_and_bare_number_sizes_are_read() -> None:
    assert parse_images('{"images": []}') == []
    assert parse_images("{}") == []
    one = {"images": [{"id": "x", "repoTags": ["a:1"], "repoDigests": None, "size": 7}]}
    assert [(i.tags, i.digests, i.size) for i in parse_images(json.dumps(one))] == [
        (("a:1",), (), 7)
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("IMAGE  TAG  IMAGE ID  SIZE\npause  3.10  873ed  320kB\n", "crictl printed no JSON"),
        ('{"images": {}}', 'no "images" list'),
        ('["images"]', 'no "images" list'),
        ('{"images": ["pause"]}', "images[0] is not an object"),
        ('{"images": [{"repoTags": "pause:3.10"}]}', "images[0].repoTags"),
        ('{"images": [{"repoTags": ["a:1"], "size": "12kB"}]}', "images[0].size"),
        ('{"images": [{"repoTags": ["a:1"], "size": -3}]}', "images[0].size"),
    ],
)
def test_output_that_is_not_crictls_json_says_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(ListError) as info:
        parse_images(text)
    assert said in str(info.value)


def test_the_images_come_from_running_crictl_with_the_endpoint(tmp_path: Path) -> None:
    crictl = FakeCrictl(tmp_path)
    endpoint = "unix:///run/containerd/containerd.sock"
    assert asyncio.run(list_images(str(crictl.path), endpoint)) == REAL_IMAGES
    assert asyncio.run(list_images(str(crictl.path))) == REAL_IMAGES
    assert crictl.calls() == [f"--runtime-endpoint {endpoint} images -o json", "images -o json"]


def test_a_missing_or_unusable_crictl_is_a_list_error(tmp_path: Path) -> None:
    with pytest.raises(ListError, match="not found"):
        asyncio.run(list_images(str(tmp_path / "no-crictl")))
    plain = tmp_path / "plain"
    plain.write_text("not a program")
    with pytest.raises(ListError, match="not executable"):
        asyncio.run(list_images(str(plain)))


def test_a_failing_crictl_is_a_list_error_quoting_its_stderr(tmp_path: Path) -> None:
    crictl = FakeCrictl(tmp_path)
    crictl.fail(
        'E1124 00:01:02 remote_image.go:128] "ListImages with filter from image service '
        'failed" err="rpc error: code = Unavailable desc = connection error"\n'
    )
    with pytest.raises(ListError) as info:
        asyncio.run(list_images(str(crictl.path)))
    assert "exited 1" in str(info.value) and "code = Unavailable" in str(info.value)


def test_a_hanging_crictl_is_killed_after_the_timeout(tmp_path: Path) -> None:
    hanging = tmp_path / "crictl"
    pid_file = tmp_path / "pid"
    hanging.write_text(
        f"#!{sys.executable}\nimport os, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    hanging.chmod(0o755)
    with pytest.raises(ListError, match=r"no answer within 0\.5s"):
        asyncio.run(list_images(str(hanging), timeout=0.5))
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
