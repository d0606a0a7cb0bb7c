# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Credentials are masked in free text and in chart values; everything else is left as it was."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common.redact import (
    MASK, redact_text, redact_values, secret_key, secret_strings)

NGC_LEGACY = base64.b64encode(b"abcdefghijklmnopqrstuvwxyz:01234567-89ab-cdef-0123-456789abcdef").decode()


@pytest.mark.parametrize("text, secret, kept", [
    ("curl: (22) https://admin:S3cretPw@registry.example/v2/ 401", "S3cretPw", "https://admin:"),
    ("git clone https://ghp_abcdefghijklmnop1234@github.com/x/y", "ghp_abcdefghijklmnop1234", "github.com/x/y"),
    ("Authorization: Bearer abc.def-ghi", "abc.def-ghi", "Authorization: Bearer "),
    ("authorization=Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "authorization="),
    ("sent header bearer Zm9vYmFyYmF6 to the API", "Zm9vYmFyYmF6", " to the API"),
    ("NGC_API_KEY=nvapi-AbCdEf0123456789ghIJKL", "AbCdEf0123456789ghIJKL", "NGC_API_KEY="),
    ("the key nvapi-AbCdEf0123_ghIJKL-xyz was refused", "AbCdEf0123_ghIJKL", " was refused"),
    ("old NGC key %s refused" % NGC_LEGACY, NGC_LEGACY, " refused"),
    ("token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl expired", "eyJzdWIiOiJ4In0", " expired"),
    ("helm registry login --password=Hunter2 nvcr.io", "Hunter2", "nvcr.io"),
    ("kubectl --token kubeT0ken get nodes", "kubeT0ken", " get nodes"),
    ("docker login -p x --registry-password Hunter2", "Hunter2", "--registry-password "),
    ("token=ghp0123; next", "ghp0123", "; next"),
    ("ACCESS_KEY: AKIA0123 done", "AKIA0123", " done"),
    ('{"password": "two words", "user": "me"}', "two words", '"user": "me"'),
    ("x-api-key: 123abc", "123abc", "x-api-key: "),
    ("secret='s p a c e'", "s p a c e", "secret="),
])
def test_credentials_are_masked_and_the_rest_kept(text, secret, kept):
    out = redact_text(text)
    assert secret not in out
    assert MASK in out
    assert kept in out


@pytest.mark.parametrize("text", [
    "Failed to connect to the host via ssh: root@10.77.250.250: Permission denied (publickey,password).",
    "checks passed: 3",
    "helm registry login --password-stdin nvcr.io",
    "kubectl --token-file /var/run/token get nodes",
    "sha256 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef mismatch",
    "/usr/lib/x86_64-linux-gnu/libcufile.so.0: cannot open shared object file",
    "ssh://root@host:22/",
    "non-zero return code",
    "nvidia_fs 2.27.3 needs NVIDIA driver >= 570 (found 550.54.15)",
    "",
])
def test_ordinary_messages_are_left_alone(text):
    assert redact_text(text) == text


def test_redaction_is_idempotent():
    once = redact_text("token=abc https://u:p@h/ Authorization: Bearer x nvapi-123 %s" % NGC_LEGACY)
    assert redact_text(once) == once


def test_none_is_none():
    assert redact_text(None) is None


@pytest.mark.parametrize("key, secret", [
    ("password", True), ("registryPassword", True), ("ngcApiKey", True), ("NGC_API_KEY", True), ("token", True),
    ("accessKey", True), ("client-secret", True), (".dockerconfigjson", True), ("auths", True),
    ("secretName", False), ("imagePullSecrets", False), ("tokenFile", False), ("key", False), ("repository", False),
    ("version", False), (3, False),
])
def test_secret_key(key, secret):
    assert secret_key(key) is secret


def test_redact_values_masks_secret_keys_at_every_depth_and_keeps_the_rest():
    values = {"driver": {"enabled": True, "repository": "nvcr.io/nvidia",
                         "licensingConfig": {"secretName": "licensing", "nlsEnabled": True}},
              "ngc": {"apiKey": "nvapi-abcdef0123"},
              "extra": [{"name": "NGC_API_KEY", "value": "x"}, {"password": "Hunter2"}],
              "note": "pull with --password=Hunter2",
              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
              "token": "",
              "auths": {"nvcr.io": {"username": "$oauthtoken", "auth": "JG9hdXRodG9rZW46c2VjcmV0"}}}
    out = redact_values(values)
    text = repr(out)
    assert "Hunter2" not in text and "nvapi-abcdef0123" not in text
    assert out["driver"] == values["driver"]
    assert out["ngc"] == {"apiKey": MASK}
    assert out["extra"][1] == {"password": MASK}
    assert out["tolerations"] == values["tolerations"]
    assert out["token"] == ""  # nothing to hide: an empty value says it is unset
    assert out["auths"] == {"nvcr.io": {"username": MASK, "auth": MASK}}  # the registry stays visible
    assert values["ngc"] == {"apiKey": "nvapi-abcdef0123"}  # the input is not changed


def test_secret_strings_are_the_whole_strings_redact_values_masks():
    values = {"ngc": {"apiKey": "nvapi-abcdef0123"}, "env": [{"name": "PULL", "value": "--password=Hunter2 x"}],
              "registry": {"password": "Pw"}, "gds": {"version": "2.29.4"}, "token": "", "auth": {"enabled": True}}
    assert secret_strings(values) == {"nvapi-abcdef0123", "--password=Hunter2 x", "Pw"}
    assert secret_strings(None) == set() and secret_strings({}) == set()
