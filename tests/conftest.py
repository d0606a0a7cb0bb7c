"""Make this checkout importable as ``ansible_collections.gpudirect.storage`` for plain pytest.

ansible-test already puts the collection on sys.path; plain ``pytest`` from the repository
root does not, so a symlink tree under build/ is created once and prepended to sys.path.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ensure_collection_importable():
    try:
        import ansible_collections.gpudirect.storage.plugins.module_utils._common.runner  # noqa: F401
        return
    except ImportError:
        pass
    base = os.path.join(ROOT, "build", "collections")
    link = os.path.join(base, "ansible_collections", "gpudirect", "storage")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(ROOT, os.path.dirname(link)), link)
    sys.path.insert(0, base)
    # ansible_collections is a namespace package: drop a cached one so the new path is seen.
    for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.gpudirect")]:
        del sys.modules[name]


_ensure_collection_importable()


# The security suite's figures (issue 36). A test marked ``attack``, ``bad_input`` or
# ``interruption`` reproduces one attack, one bad input or one interruption of the probe; it
# passes when the attack failed, nothing was written, nothing was left. The summary counts what
# ran: a failed test is an attack that succeeded. Tests record what they measured with pytest's
# ``record_property``: ``bytes_left`` (interruptions) and ``written`` (bad inputs), summed here.
SECURITY_KINDS = {
    "attack": "attacks tried / succeeded",
    "bad_input": "bad inputs tried / anything written",
    "interruption": "probe interruptions (timeout, SIGKILL of child and of module) / bytes left",
}


def pytest_configure(config):
    for kind, what in SECURITY_KINDS.items():
        config.addinivalue_line("markers", "%s: security suite, %s" % (kind, what))


def pytest_terminal_summary(terminalreporter):
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
               if getattr(r, "when", "call") == "call"]
    lines = []
    for kind, what in SECURITY_KINDS.items():
        mine = [r for r in reports if kind in r.keywords]
        if not mine:
            continue
        failed = sum(1 for r in mine if r.failed)
        measured = sum(value for r in mine for name, value in r.user_properties
                       if name in ("bytes_left", "written"))
        second = failed if kind == "attack" else "%d (failed tests: %d)" % (measured, failed)
        lines.append("security: %s: %d / %s" % (what, len(mine), second))
    if lines:
        terminalreporter.write_sep("-", "security suite")
        for line in lines:
            terminalreporter.write_line(line)
