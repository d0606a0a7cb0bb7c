# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bounded retry with backoff for READ-ONLY Kubernetes API calls, and ApiCallFailed (one line naming
the verb and resource). PRIVATE to the collection.

An API server restart or a dropped connection must not fail a rollout, nor make it wait forever.
Calls that change the cluster are never retried here: helm has its own --wait / --timeout."""

from __future__ import annotations

import json
import time

ATTEMPTS = 5          # 1 call + 4 retries
FIRST_DELAY = 0.5     # seconds; doubled after every failed attempt: 0.5, 1, 2, 4 (7.5 s in all)
MAX_DELAY = 8.0
# What helm (client-go) and the kubernetes client say when the API is down or overloaded.
TRANSIENT_TEXT = (
    "connection refused", "cluster unreachable", "no route to host", "i/o timeout", "connection reset",
    "tls handshake timeout", "has prevented the request from succeeding", "internal server error",
    "service unavailable", "bad gateway", "gateway timeout", "too many requests",
    "the server is currently unable to handle the request", "etcdserver", "unexpected eof",
    "max retries exceeded", "failed to establish a new connection", "temporarily unavailable",
    "connection aborted", "remote end closed connection")
TRANSIENT_TYPES = ("MaxRetryError", "NewConnectionError", "ProtocolError", "ReadTimeoutError",
                   "ConnectTimeoutError", "RemoteDisconnected")


class ApiUnavailable(Exception):
    """The API stayed unavailable for every attempt; ``str()`` says what, how often, the last error."""

    def __init__(self, what, attempts, waited, last):
        self.what = what
        self.attempts = attempts
        self.waited = waited
        self.last = last
        super(ApiUnavailable, self).__init__(
            "Kubernetes API unavailable while %s: gave up after %d attempts over %.1fs (backoff %s): %s"
            % (what, attempts, waited, ", ".join("%gs" % d for d in delays(attempts)), error_text(last)))


class ApiCallFailed(Exception):
    """One API call that failed; ``str()`` names the verb and the resource refused, e.g.
    ``patch nodes/gpu-b: 403 Forbidden: <the API server's message>``."""

    def __init__(self, verb, resource, exc):
        self.verb, self.resource, self.status = verb, resource, getattr(exc, "status", None)
        super(ApiCallFailed, self).__init__("%s %s: %s" % (verb, resource, status_text(exc)))


def status_text(exc):
    """``403 Forbidden: <message of the Status body>`` for an API answer, else the error itself."""
    status = getattr(exc, "status", None)
    if not isinstance(status, int) or isinstance(status, bool):
        return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    text = ("%d %s" % (status, getattr(exc, "reason", None) or "")).strip()
    try:
        message = json.loads(getattr(exc, "body", None) or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return text + (": " + message[:300] if message else "")


def delays(attempts=ATTEMPTS, first=FIRST_DELAY, cap=MAX_DELAY):
    """The waits between ``attempts`` tries: 0.5, 1, 2, 4 ... capped at ``cap``."""
    return [min(cap, first * 2 ** i) for i in range(max(0, attempts - 1))]


def error_text(exc):
    """One line of what went wrong (a CommandError's stderr tail, an ApiException's reason)."""
    stderr = getattr(exc, "stderr", None)
    if stderr:
        text = stderr.strip().splitlines()[-1]
    else:
        status = getattr(exc, "status", None)
        reason = getattr(exc, "reason", None)
        text = ("HTTP %s %s" % (status, reason or "")).strip() if isinstance(status, int) else str(exc)
        body = getattr(exc, "body", None)
        if body:
            text += ": " + str(body)[:300]
    return text.strip()[:500]


def is_transient(exc):
    """True for errors a retry may cure: no connection, 5xx, 429. Never for 4xx, bad input,
    a missing release or a failed helm operation."""
    status = getattr(exc, "status", None)
    if isinstance(status, int) and not isinstance(status, bool) and (status >= 500 or status in (0, 429)):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    if any(t.__name__ in TRANSIENT_TYPES for t in type(exc).__mro__):
        return True
    text = ("%s %s %s" % (getattr(exc, "stderr", "") or "", getattr(exc, "stdout", "") or "", exc)).lower()
    return any(t in text for t in TRANSIENT_TEXT)


def call(what, func, *args, **kwargs):
    """``func(*args)``, retried on transient errors with backoff; ApiUnavailable when every
    attempt failed. Keyword-only controls: attempts, sleep, clock."""
    attempts = kwargs.pop("attempts", ATTEMPTS)
    sleep = kwargs.pop("sleep", time.sleep)
    clock = kwargs.pop("clock", time.monotonic)
    waits = delays(attempts)
    start = clock()
    for attempt in range(attempts):
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # classified below; anything else is re-raised unchanged
            if not is_transient(exc):
                raise
            if attempt == attempts - 1:
                raise ApiUnavailable(what, attempts, clock() - start, exc)
            sleep(waits[attempt])


class RetryingSource(object):
    """A _k8s.wait source (``list``/``watch``) whose lists are retried. Watches already
    reconnect on their own (Waiter._watch_loop)."""

    def __init__(self, source, sleep=time.sleep, clock=time.monotonic):
        self.source = source
        self.sleep = sleep
        self.clock = clock

    def list(self, kind):
        return call("listing %s" % kind, self.source.list, kind, sleep=self.sleep, clock=self.clock)

    def watch(self, kind, resource_version, timeout):
        return self.source.watch(kind, resource_version, timeout)
