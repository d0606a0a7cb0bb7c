# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Credentials out of what we show. PRIVATE to the collection. Pure, standard library only.

:func:`redact_text` masks credentials in free text (a failed task's message or stderr before the
fleet report keeps it); :func:`redact_values` masks the values of secret-looking keys in a
nested document (Helm chart values before a result or a diff shows them).
"""

from __future__ import annotations

import re

MASK = "********"

_SECRET_WORDS_IN_TEXT = r"passw(?:or)?d|passphrase|token|secret|api[_-]?key|access[_-]?key|private[_-]?key"
# words of a key (camelCase, snake_case, kebab-case) that make its value a credential; a key whose
# last word names or points at a secret (secretName, imagePullSecrets, tokenFile) holds none
_SECRET_WORDS_OF_KEYS = frozenset(("password", "passwd", "passphrase", "token", "secret", "credential", "credentials",
                                   "auth", "auths", "ngc", "apikey", "dockerconfigjson", "dockercfg"))
_SECRET_PAIRS_OF_KEYS = frozenset((("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key")))
_REFERENCE_WORDS = frozenset(("name", "names", "ref", "secrets", "file", "path", "enabled"))

_TEXT_RULES = [
    # scheme://user:password@host -> the password; scheme://token@host (a long user part) -> all of it
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@", re.IGNORECASE), r"\1" + MASK + "@"),
    (re.compile(r"(\bhttps?://)[A-Za-z0-9_\-.~%]{16,}@", re.IGNORECASE), r"\1" + MASK + "@"),
    # Authorization: Bearer/Basic/Token <credential>, and a bearer token anywhere
    (re.compile(r"(\bauthorization\s*[:=]\s*(?:(?:bearer|basic|token|negotiate)\s+)?)[^\s'\",;]+", re.IGNORECASE),
     r"\1" + MASK),
    (re.compile(r"(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE), r"\1" + MASK),
    # NGC personal and service keys, JSON web tokens (Kubernetes service account tokens)
    (re.compile(r"\bnvapi-[A-Za-z0-9_\-]+"), "nvapi-" + MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"), MASK),
    # --password=VALUE, --token VALUE (command lines; not --password-stdin, --token-file)
    (re.compile(r"(--?[a-z0-9\-]*(?:%s)(?![a-z0-9\-]*(?:stdin|file)\b)[a-z0-9\-]*(?:=|\s+))(?!-)[^\s'\",;]+"
                % _SECRET_WORDS_IN_TEXT, re.IGNORECASE), r"\1" + MASK),
    # token=VALUE, password: VALUE, "api_key": "VALUE" (settings, environment, JSON; a quoted value whole)
    (re.compile(r"""(\b[a-z0-9_.\-]*(?:%s)[a-z0-9_.\-]*["']?\s*[=:]\s*)(?!["']?%s)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s'",;&]+)"""
                % (_SECRET_WORDS_IN_TEXT, re.escape(MASK)), re.IGNORECASE),
     lambda m: m.group(1) + (m.group(2)[0] + MASK + m.group(2)[0] if m.group(2)[0] in "'\"" else MASK)),
]
# base64 runs such as the older NGC API keys: long, mixed case and digits (hex digests are left alone)
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40,}={0,2}")


def _looks_like_a_key(match):
    run = match.group(0).rstrip("=")
    if re.fullmatch(r"[0-9a-fA-F]+", run) or "//" in run:
        return False
    return bool(re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"[0-9]", run))


def redact_text(text):
    """``text`` with the credentials it carries replaced by ********: passwords in URLs,
    Authorization headers and bearer tokens, NGC API keys (nvapi-... and the older base64 keys),
    JSON web tokens, --password=... style options and token=... style settings."""
    if not text:
        return text
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    return _BASE64_RUN.sub(lambda m: MASK if _looks_like_a_key(m) else m.group(0), text)


def secret_key(name):
    """True for a key whose value is a credential by its name (password, token, apiKey, ngc...)."""
    if not isinstance(name, str):
        return False
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)]
    if not words or words[-1] in _REFERENCE_WORDS:
        return False
    return any(w in _SECRET_WORDS_OF_KEYS for w in words) or any(p in _SECRET_PAIRS_OF_KEYS for p in zip(words, words[1:]))


def redact_values(value, under_secret=False):
    """A copy of a nested dict/list document in which every value under a secret-looking key is
    ******** (a dict or list there keeps its keys, every value in it masked); other strings pass
    through :func:`redact_text`. An empty value stays as it is: it says the setting is unset."""
    if isinstance(value, dict):
        return dict((k, redact_values(v, under_secret or secret_key(k))) for k, v in value.items())
    if isinstance(value, list):
        return [redact_values(v, under_secret) for v in value]
    if under_secret and value not in (None, ""):
        return MASK
    return redact_text(value) if isinstance(value, str) else value


def secret_strings(value):
    """The strings of a nested document that :func:`redact_values` masks (whole, as they are), for
    AnsibleModule.no_log_values: Ansible then masks them wherever they appear in a result,
    including the echo of the module's own arguments."""
    found = set()

    def walk(original, shown):
        if isinstance(original, dict):
            for key in original:
                walk(original[key], shown[key])
        elif isinstance(original, list):
            for item, item_shown in zip(original, shown):
                walk(item, item_shown)
        elif isinstance(original, str) and original != shown:
            found.add(original)

    walk(value, redact_values(value))
    return found
