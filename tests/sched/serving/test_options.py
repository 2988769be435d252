"""The serving flags of ``kubesalvo run``: kube-scheduler's defaults, the plain port only
when asked for, the old spellings keeping their meaning, and bad values refused with
exit code 2 and the flag's name."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from kubesalvo.sched.serving.options import (
    OptionsError,
    ServingOptions,
    add_flags,
    options_from_args,
)


def parse(*argv: str) -> ServingOptions:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return options_from_args(parser.parse_args(list(argv)))


def test_defaults_are_kube_schedulers_https_on_10259_and_no_plain_port():
    options = parse()
    assert (options.bind_address, options.secure_port) == ("0.0.0.0", 10259)
    assert options.insecure_port == 0
    assert options.always_allow_paths == ("/healthz", "/livez", "/readyz")
    assert options.tls_cert_file is None and options.tls_private_key_file is None


def test_the_plain_port_is_on_loopback_unless_an_address_is_given():
    assert parse("--insecure-port", "8080").insecure_bind_address == "127.0.0.1"
    options = parse("--insecure-port", "8080", "--insecure-bind-address", "0.0.0.0")
    assert (options.insecure_bind_address, options.insecure_port) == ("0.0.0.0", 8080)
    assert options.secure_port == 10259


def test_the_old_metrics_flags_keep_their_meaning_plain_http_only():
    options = parse("--metrics-address", "127.0.0.1", "--metrics-port", "9100")
    assert (options.insecure_bind_address, options.insecure_port) == ("127.0.0.1", 9100)
    assert options.secure_port == 0
    both = parse("--metrics-port", "9100", "--secure-port", "9443")
    assert (both.insecure_port, both.secure_port) == (9100, 9443)


def test_always_allowed_paths_are_a_comma_separated_list():
    options = parse("--authorization-always-allow-paths", "/healthz, /debug/*")
    assert options.always_allow_paths == ("/healthz", "/debug/*")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--secure-port", "70000"], "--secure-port"),
        (["--insecure-port", "-1"], "--insecure-port"),
        (["--bind-address", "example.com"], "--bind-address"),
        (["--insecure-bind-address", "nowhere"], "--insecure-bind-address"),
        (["--tls-cert-file", "/x.crt"], "--tls-private-key-file"),
        (["--tls-private-key-file", "/x.key"], "--tls-cert-file"),
        (["--authorization-always-allow-paths", "healthz"], "--authorization-always-allow-paths"),
    ],
)
def test_values_that_cannot_work_are_refused_naming_the_flag(argv, flag):
    with pytest.raises(OptionsError, match=flag):
        parse(*argv)


def test_kubesalvo_run_exits_2_with_the_flag_on_stderr_before_connecting():
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "run", "--tls-cert-file", "/nope.crt"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--tls-private-key-file" in done.stderr
    assert "Traceback" not in done.stderr
