# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Package version comparison and version selection. PRIVATE to the collection.

A comparison for a package manager (``family`` "apt" or "dnf") is that manager's own: python3-apt's
``apt_pkg.version_compare`` or rpm's ``rpm.labelCompare``, where the Python that Ansible runs on the
host imports them (the distribution's python3 does: dnf itself needs rpm's bindings). Without them,
and for versions of no package manager (driver versions), it is Debian's verrevcmp below, which
orders the versions the GDS packages use as rpmvercmp does (they differ on separators other than
``.`` and ``-``, and on rpm's ``^``). Standard library only: the nvidia-fs and OFED rules import
this without the apt/dnf machinery."""

from __future__ import annotations

_LIBRARY_COMPARE = {}


def _order(c):
    if c == "~":
        return -1
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _cmp_part(a, b):
    """Debian's verrevcmp of one part (upstream or revision)."""
    ia = ib = 0
    while ia < len(a) or ib < len(b):
        first_diff = 0
        while (ia < len(a) and not a[ia].isdigit()) or (ib < len(b) and not b[ib].isdigit()):
            ac = _order(a[ia]) if ia < len(a) and not a[ia].isdigit() else 0
            bc = _order(b[ib]) if ib < len(b) and not b[ib].isdigit() else 0
            if ac != bc:
                return -1 if ac < bc else 1
            ia += 1
            ib += 1
        while ia < len(a) and a[ia] == "0":
            ia += 1
        while ib < len(b) and b[ib] == "0":
            ib += 1
        while ia < len(a) and a[ia].isdigit() and ib < len(b) and b[ib].isdigit():
            if not first_diff:
                first_diff = ord(a[ia]) - ord(b[ib])
            ia += 1
            ib += 1
        if ia < len(a) and a[ia].isdigit():
            return 1
        if ib < len(b) and b[ib].isdigit():
            return -1
        if first_diff:
            return -1 if first_diff < 0 else 1
    return 0


def _split(v):
    """``[epoch:]upstream[-revision]`` -> (epoch as a string of digits, upstream, revision)."""
    epoch, _sep, rest = v.partition(":") if ":" in v else ("0", "", v)
    up, _sep, rev = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return epoch if epoch.isdigit() else "0", up, rev


def _apt_compare():
    try:
        import apt_pkg  # pylint: disable=import-error
    except ImportError:
        return None
    apt_pkg.init_system()
    return apt_pkg.version_compare


def _rpm_compare():
    try:
        import rpm  # pylint: disable=import-error
    except ImportError:
        return None
    return lambda a, b: rpm.labelCompare(_split(a), _split(b))


def library_compare(family):
    """The package manager's own comparison for ``family`` ("apt", "dnf"), or None where its
    Python library is not importable here (then :func:`compare_versions` uses verrevcmp)."""
    if family not in _LIBRARY_COMPARE:
        load = {"apt": _apt_compare, "dnf": _rpm_compare}.get(family)
        try:
            _LIBRARY_COMPARE[family] = load() if load else None
        except (SystemError, ValueError):  # apt_pkg without a readable apt configuration
            _LIBRARY_COMPARE[family] = None
    return _LIBRARY_COMPARE[family]


def compare_versions(a, b, family=None):
    """-1/0/1 comparing two package versions ``[epoch:]upstream[-revision]``: as the package
    manager ``family`` orders them where its library is importable, else by verrevcmp."""
    library = library_compare(family) if family else None
    if library is not None:
        res = library(a, b)
        return (res > 0) - (res < 0)
    ea, ua, ra = _split(a)
    eb, ub, rb = _split(b)
    if int(ea) != int(eb):
        return -1 if int(ea) < int(eb) else 1
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)


def version_matches(version, wanted):
    """True if ``version`` is ``wanted`` or starts with it at a separator boundary:
    ``2.26.6`` matches ``2.26.6-1``; ``24.10`` matches ``24.10-4.1.4.0``; ``2.2`` does NOT
    match ``2.26.6``. A leading ``epoch:`` in ``version`` is ignored unless ``wanted`` has one."""
    if not version or not wanted:
        return False
    if ":" in version and ":" not in wanted:
        version = version.split(":", 1)[1]
    if version == wanted:
        return True
    return version.startswith(wanted) and version[len(wanted)] in ".-~+_"


def select_version(available, wanted, family=None):
    """Highest version in ``available`` that matches ``wanted`` (None: the highest of all), as
    the package manager ``family`` orders them (:func:`compare_versions`)."""
    cands = [v for v in available if wanted is None or version_matches(v, wanted)]
    best = None
    for v in cands:
        if best is None or compare_versions(v, best, family) > 0:
            best = v
    return best


def split_spec(spec):
    """``("name", "1.2-1")`` of the package spec ``name=1.2-1`` (``("name", None)`` without a version)."""
    name, _sep, ver = spec.partition("=")
    return name.strip(), (ver.strip() or None)
