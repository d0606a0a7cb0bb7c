# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Faults of the Kubernetes API under gpudirect.storage.gpu_operator (issue 10).

The gpu_operator integration harness (tests/integration/gpu_operator: the API emulator over
HTTPS, helm 4.1.4, the test chart, playbooks/module.yml) with a small fault proxy of our own on
loopback between the module and the emulator: it refuses connections, answers every request
with HTTP 500, or answers the first few with 500 and then relays. The module must retry
read-only calls with backoff and then fail clearly, or get through a short outage. The
CrashLoopBackOff fault is the integration suite's test_lifecycle (counted in the summary).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import threading

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gpu_operator"))
import gpu_operator_rig as gpu_it  # noqa: E402 pylint: disable=import-error,wrong-import-position

helm_bins = gpu_it.helm_bins  # the integration suite's fixture: helm from build/helm
HELM = "4.1.4"
STATUS_500 = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": "etcdserver: leader changed", "reason": "InternalError", "code": 500})


class FaultProxy(object):
    """TCP proxy on 127.0.0.1 in front of the emulator. ``fail_first`` connections get TLS
    terminated (with the emulator's own certificate) and an HTTP 500 answer; later ones are
    relayed byte for byte. ``fail_first=None``: every connection gets a 500."""

    def __init__(self, upstream, workdir, fail_first=None):
        self.upstream = upstream
        self.fail_first = fail_first
        self.answered_500 = 0
        self.relayed = 0
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(workdir, "server.crt"), os.path.join(workdir, "server.key"))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            with self.lock:
                fail = self.fail_first is None or self.answered_500 < self.fail_first
                if fail:
                    self.answered_500 += 1
                else:
                    self.relayed += 1
            threading.Thread(target=self._answer_500 if fail else self._relay, args=(conn,), daemon=True).start()

    def _answer_500(self, conn):
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
            tls.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = tls.recv(65536)
                if not chunk:
                    return
                data += chunk
            body = STATUS_500.encode()
            tls.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            tls.close()
        except (OSError, ssl.SSLError):
            conn.close()

    def _relay(self, conn):
        up = socket.create_connection(self.upstream)

        def pump(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
        threading.Thread(target=pump, args=(up, conn), daemon=True).start()
        pump(conn, up)

    def stop(self):
        self.stopped = True
        self.sock.close()


def _kubeconfig(emu, port, path):
    with open(emu.kubeconfig) as f:
        text = f.read()
    host = emu.url.rsplit(":", 1)[0]
    with open(path, "w") as f:
        f.write(text.replace(emu.url, "%s:%d" % (host, port)))
    os.chmod(path, 0o600)
    return path


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def rig(helm_bins, tmp_path):
    emulator = gpu_it.Emulator(tmp_path / "emulator", pod_delay=0.1)
    emulator.start()
    try:
        yield gpu_it.Rig(tmp_path, helm_bins[HELM], emulator)
    finally:
        emulator.stop()


def _upstream(rig):
    host_port = rig.emu.url.split("://", 1)[1]
    host, port = host_port.rsplit(":", 1)
    return host, int(port)


def _play(rig, kubeconfig, **extra):
    args = {"go_chart_ref": gpu_it.CHART, "go_kubeconfig": kubeconfig, "go_wait_timeout": 60,
            "go_gds": {"version": "2.30.1"}}
    args.update(extra)
    return rig.play(**args)


@pytest.mark.reliability_fault("Kubernetes API unreachable: gpu_operator retries with backoff, then fails clearly")
def test_kubernetes_api_unreachable(rig, tmp_path):
    kubeconfig = _kubeconfig(rig.emu, _closed_port(), str(tmp_path / "unreachable.kubeconfig"))
    rc, res, out = _play(rig, kubeconfig)
    assert rc != 0 and res["failed"] is True, out[-4000:]
    msg = res["msg"]
    assert "Kubernetes API unavailable" in msg and "after 5 attempts" in msg, msg
    assert "connection refused" in msg.lower(), msg
    assert not any(" upgrade " in c for c in res.get("commands", [])), res.get("commands")
    assert rig.revisions() == []  # nothing was installed


@pytest.mark.reliability_fault("Kubernetes API answering 500s: gpu_operator retries with backoff, then fails clearly")
def test_kubernetes_api_answering_500(rig, tmp_path):
    proxy = FaultProxy(_upstream(rig), rig.emu.workdir)
    try:
        kubeconfig = _kubeconfig(rig.emu, proxy.port, str(tmp_path / "500.kubeconfig"))
        rc, res, out = _play(rig, kubeconfig)
    finally:
        proxy.stop()
    assert rc != 0 and res["failed"] is True, out[-4000:]
    msg = res["msg"]
    assert "Kubernetes API unavailable" in msg and "after 5 attempts" in msg, msg
    # the first read that meets the 500s names them: the API client's (finding the installer) or helm's
    assert "HTTP 500" in msg or ("an error on the server" in msg and "has prevented the request" in msg), msg
    assert proxy.answered_500 >= 5 and proxy.relayed == 0
    assert not any(" upgrade " in c for c in res.get("commands", []))
    assert rig.revisions() == []


@pytest.mark.reliability_fault("Kubernetes API 500s for a moment: retried with backoff, the install goes through")
def test_kubernetes_api_500_blip_is_ridden_out(rig, tmp_path):
    proxy = FaultProxy(_upstream(rig), rig.emu.workdir, fail_first=2)
    try:
        kubeconfig = _kubeconfig(rig.emu, proxy.port, str(tmp_path / "blip.kubeconfig"))
        rc, res, out = _play(rig, kubeconfig)
    finally:
        proxy.stop()
    assert rc == 0 and res["changed"] is True, out[-4000:]
    assert proxy.answered_500 == 2 and proxy.relayed > 0
    assert res["release"]["status"] == "deployed" and all(n["gds_ready"] for n in res["nodes"])
