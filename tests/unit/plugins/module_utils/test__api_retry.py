# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_api_retry: which Kubernetes API errors are retried, the backoff, the give-up message; and
the gpu_operator module riding out / failing on an unavailable API (fake helm + fake API)."""

from __future__ import annotations

from unittest import mock

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import api_retry as retry
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Result

HELM = "/work/main/build/helm/4.1.4/helm"
# helm 4.1.4 against the API emulator behind tests/system/test_faults_k8s.py's fault proxy
REFUSED = ('Error: kubernetes cluster unreachable: Get "https://127.0.0.1:53879/version": dial tcp '
           '127.0.0.1:53879: connect: connection refused\n')
SERVER_500 = ('Error: kubernetes cluster unreachable: an error on the server ("unknown") has prevented the '
              'request from succeeding\n')
NOT_FOUND = "Error: release: not found\n"
FORBIDDEN = ('Error: query: failed to query with labels: secrets is forbidden: User "dev" cannot list resource '
             '"secrets" in API group "" in the namespace "gpu-operator"\n')


def helm_error(stderr):
    return CommandError([HELM, "history", "gpu-operator"], 1, "", stderr)


class ApiException(Exception):
    """Shaped like kubernetes.client.exceptions.ApiException (status, reason, body)."""

    def __init__(self, status, reason, body=None):
        super(ApiException, self).__init__("(%s)\nReason: %s\n" % (status, reason))
        self.status, self.reason, self.body = status, reason, body


def test_backoff_doubles_and_is_bounded():
    assert retry.delays() == [0.5, 1, 2, 4]
    assert retry.delays(8)[-2:] == [8.0, 8.0] and retry.delays(1) == []


@pytest.mark.parametrize("exc, transient", [
    (helm_error(REFUSED), True),
    (helm_error(SERVER_500), True),
    (helm_error(NOT_FOUND), False),
    (helm_error(FORBIDDEN), False),
    (ApiException(500, "Internal Server Error"), True),
    (ApiException(503, "Service Unavailable"), True),
    (ApiException(429, "Too Many Requests"), True),
    (ApiException(403, "Forbidden"), False),
    (ApiException(404, "Not Found"), False),
    (ConnectionRefusedError(111, "Connection refused"), True),
    (ValueError("helm history returned str, not a list"), False),
])
def test_transient_errors(exc, transient):
    assert retry.is_transient(exc) is transient


def test_urllib3_connection_errors_are_transient():
    urllib3 = pytest.importorskip("urllib3")
    refused = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: [Errno 111] "
                                                          "Connection refused")
    assert retry.is_transient(refused)
    assert retry.is_transient(urllib3.exceptions.MaxRetryError(None, "/api/v1/nodes", reason=refused))


def test_call_rides_out_a_short_outage():
    outcomes = [helm_error(REFUSED), helm_error(SERVER_500), "history"]
    slept = []

    def func():
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item
    assert retry.call("reading the release history", func, sleep=slept.append) == "history"
    assert slept == [0.5, 1]


def test_call_gives_up_after_the_bound_with_a_clear_message():
    slept = []
    clock = iter(range(100)).__next__
    with pytest.raises(retry.ApiUnavailable) as err:
        retry.call("reading the release history", mock.Mock(side_effect=helm_error(SERVER_500)),
                   sleep=slept.append, clock=clock)
    assert slept == [0.5, 1, 2, 4]
    assert str(err.value) == ('Kubernetes API unavailable while reading the release history: gave up after 5 '
                              'attempts over 1.0s (backoff 0.5s, 1s, 2s, 4s): ' + SERVER_500.strip())


def test_permanent_errors_are_not_retried():
    slept = []
    with pytest.raises(CommandError):
        retry.call("x", mock.Mock(side_effect=helm_error(FORBIDDEN)), sleep=slept.append)
    assert slept == []


def test_retrying_source_retries_lists_only():
    inner = mock.Mock()
    inner.list.side_effect = [ApiException(500, "Internal Server Error"), ([{"metadata": {"name": "n"}}], "7")]
    inner.watch.return_value = iter(())
    slept = []
    src = retry.RetryingSource(inner, sleep=slept.append)
    assert src.list("nodes") == ([{"metadata": {"name": "n"}}], "7") and slept == [0.5]
    assert list(src.watch("pods", "7", 5)) == [] and inner.watch.call_args[0] == ("pods", "7", 5)


# --------------------------------------------------------------------------- the module
def _flaky(helm, failures):
    """helm whose first ``failures`` calls to ``history`` fail like an unreachable API."""
    left = [failures]

    def run(argv, **kw):
        if argv[1] == "history" and left[0] > 0:
            left[0] -= 1
            helm.calls.append(list(argv))
            if kw.get("check", True):
                raise helm_error(SERVER_500)
            return Result(argv, 1, "", SERVER_500)
        return helm(argv, **kw)
    return run


@pytest.mark.parametrize("failures, ok", [(2, True), (9, False)])
def test_gpu_operator_retries_reads_then_succeeds_or_fails_clearly(failures, ok):
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gpu_operator as mgr
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules import test_gpu_operator as gop
    helm = gop.FakeHelm(*gop.deployed({"gds": {"enabled": True, "version": "2.29.4"}}))
    slept = []
    with mock.patch.object(mgr.time, "sleep", slept.append):
        res = gop.run(_flaky(helm, failures), {"gds": {"version": "2.30.1"}})
    verbs = [c[1] for c in helm.calls]
    if ok:
        assert not res.get("failed") and res["changed"] and slept == [0.5, 1], res
        assert verbs.count("upgrade") == 1
    else:
        assert res["failed"] and slept == [0.5, 1, 2, 4]
        assert res["msg"].startswith("Kubernetes API unavailable while reading the release history: gave up after "
                                     "5 attempts"), res["msg"]
        assert "upgrade" not in verbs and verbs.count("history") == 5
