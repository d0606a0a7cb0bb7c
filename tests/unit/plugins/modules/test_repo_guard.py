# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Repositories are checked before they are written, and a failed stage leaves the host as it
found it (issue 18): a missing key file, a missing local directory or a URL that does not
resolve or answer fails up front naming the option, with nothing written; a stage that fails
after writing its repository file puts the file AND the package index (/var/lib/apt/lists)
back, and then its result says so - changed false, no actions, "Nothing was changed"."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from ansible_collections.gpudirect.storage.plugins.modules import mofed, nvidia_fs
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import FakeHost

KEY = "/etc/apt/keyrings/cuda.asc"
INLINE = ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0Ab1RYJKwYBBAHaRw8BAQdA0b2Jx9n6sVx0Uq3\n=AbCd\n"
          "-----END PGP PUBLIC KEY BLOCK-----\n")


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path, monkeypatch)
    h.available = {"nvidia-fs-dkms": ["2.28.2-1"], "nvidia-fs": ["2.28.2-1"],
                   "doca-ofed": ["3.2.1-044000-25.10-ubuntu2404"]}
    h.write(KEY.lstrip("/"), "key\n")
    (h.root / "srv/cuda-local").mkdir(parents=True)
    h.write("var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease", "the index before\n")
    return h


def _repo(**over):
    return dict({"path": "/srv/cuda-local", "signed_by": KEY}, **over)


STAGES = [(nvidia_fs.main, {"version": "2.28"}), (mofed.main, {"flavour": "doca-ofed"})]


@pytest.mark.parametrize("main, args", STAGES)
@pytest.mark.parametrize("repo, needle", [
    (_repo(signed_by="/etc/apt/keyrings/missing.asc"), "repo.signed_by: the key file /etc/apt/keyrings/missing.asc does not exist on the host"),
    (_repo(path="/srv/not-mounted"), "repo.path: the directory /srv/not-mounted does not exist on the host"),
    ({"url": "http://mirror.example.internal/cuda/", "signed_by": KEY}, "repo.url: mirror.example.internal does not resolve"),
    ({"url": "file:/srv/nowhere", "signed_by": KEY}, "repo.url: the directory /srv/nowhere does not exist on the host"),
])
@pytest.mark.parametrize("check_mode", [False, True])
def test_a_repository_that_cannot_work_fails_up_front_and_writes_nothing(host, monkeypatch, main, args, repo,
                                                                         needle, check_mode):
    real = socket.getaddrinfo

    def resolve(name, *a, **kw):
        if name.endswith(".internal"):
            raise socket.gaierror(-2, "Name or service not known")
        return real(name, *a, **kw)
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    before = host.snapshot()
    res = host.run(main, dict(args, repo=repo), check_mode=check_mode)
    assert res.get("failed") and needle in res["msg"], res.get("msg")
    assert "nothing was written" in res["msg"].lower() or "nothing was changed" in res["msg"].lower()
    assert res["changed"] is False and res["actions"] == []
    assert host.snapshot() == before and host.mutating_calls() == []


@pytest.mark.parametrize("main, args", STAGES)
def test_a_stage_that_fails_after_its_repository_puts_file_and_index_back(host, main, args):
    """The repository works, but what the stage needs is not in it: plan errors after the
    repository file was written and the index refreshed."""
    host.available = {}  # the new repository has no nvidia-fs / DOCA packages
    before = host.snapshot()
    res = host.run(main, dict(args, repo=_repo()))
    assert res.get("failed") and "Nothing was changed" in res["msg"], res.get("msg")
    assert ["/usr/bin/apt-get", "update", "-q"] in host.argvs("apt-get")  # it was written and refreshed ...
    assert host.snapshot() == before  # ... and both are back: no sources file, no list file of it
    assert res["changed"] is False and res["actions"] == []


@pytest.mark.parametrize("main, args", STAGES)
def test_a_refresh_that_fails_puts_file_and_index_back(host, main, args):
    host.fail["apt-get update"] = (100, "", "E: The repository 'file:/srv/cuda-local ./ Release' is not signed.\n")
    before = host.snapshot()
    res = host.run(main, dict(args, repo=_repo()))
    assert res.get("failed") and "is not signed" in res["msg"] and "Nothing was changed" in res["msg"]
    assert "repo" in res["msg"]
    assert host.snapshot() == before and res["changed"] is False and res["actions"] == []


def test_a_working_repository_keeps_its_index(host):
    res = host.run(nvidia_fs.main, {"version": "2.28", "repo": _repo(), "load": False, "persistent": False})
    assert not res.get("failed"), res.get("msg")
    assert host.read("var/lib/apt/lists/srv_cuda-local_._Packages")
    assert res["actions"][:2] == ["create %s" % (host.root / "etc/apt/sources.list.d/gpudirect-cuda.sources"),
                                  "refresh package metadata"]
    assert not [p for p in (host.root / "var/lib/apt").iterdir() if p.name.startswith(".gpudirect")]


def test_an_inline_key_needs_no_file_and_is_written_into_the_source(host):
    res = host.run(nvidia_fs.main, {"version": "2.28", "repo": _repo(signed_by=INLINE), "load": False,
                                    "persistent": False})
    assert not res.get("failed"), res.get("msg")
    src = host.read("etc/apt/sources.list.d/gpudirect-cuda.sources")
    assert "Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mDMEZ0Ab1RYJ" in src
    assert src.endswith(" -----END PGP PUBLIC KEY BLOCK-----\n")


def test_url_answers_needs_a_resolving_host_that_answers():
    from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repo_guard as _repo_guard
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert _repo_guard.url_problem("http://127.0.0.1:%d/cuda/" % server.server_port) is None
    finally:
        server.shutdown()
        server.server_close()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    problem = _repo_guard.url_problem("http://127.0.0.1:%d/cuda/" % port, timeout=5)
    assert problem.startswith("http://127.0.0.1:%d/cuda/ does not answer" % port)
