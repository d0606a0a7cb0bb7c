# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Write the fleet report files on the controller. PRIVATE to the collection.

Used by the ``gds_report`` action plugin and by the ``gds_report`` callback's
fallback (a run that ended before its report play). ``changed`` comes from
``_report.fleet.same_report`` (the generation time is ignored), files are replaced atomically
(a temporary file in the same directory, then ``os.replace``), nothing is written in check
mode, and an unchanged report is left as it is.
"""

from __future__ import annotations

import json
import os
import tempfile

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import markdown
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.html import render_html

FILES = {"json": "gds-fleet.json", "md": "gds-fleet.md", "html": "gds-fleet.html"}
FORMATS = ("json", "md", "html")
ENV_DIR = "GDS_REPORT_DIR"


def project_dir(playbooks):
    """Directory of the run's first playbook file (its parent when it is a ``playbooks``
    directory, as in this collection), or None for a playbook named by collection name."""
    first = next(iter(playbooks or []), None)
    if not first or not (first.endswith((".yml", ".yaml")) or os.path.isfile(first)):
        return None
    base = os.path.dirname(os.path.abspath(first))
    return os.path.dirname(base) if os.path.basename(base) == "playbooks" else base


def report_dir(dest, playbooks, environ):
    """Where the report goes, never depending on the current directory: ``dest``, else
    $GDS_REPORT_DIR, else ``reports``; a relative one is taken under the project directory (see
    :func:`project_dir`), or under ~/.ansible when the playbook was named by its collection name
    (``ansible-playbook gpudirect.storage.verify``: ~/.ansible/gds-reports)."""
    chosen = dest or environ.get(ENV_DIR) or None
    if chosen and os.path.isabs(chosen):
        return os.path.normpath(chosen)
    base = project_dir(playbooks)
    if base is None:
        home = environ.get("HOME") or os.path.expanduser("~")
        return os.path.normpath(os.path.join(home, ".ansible", chosen or "gds-reports"))
    return os.path.normpath(os.path.join(base, chosen or "reports"))


def render_all(report, formats=FORMATS):
    """{format: text}; the JSON document is always part of it (it decides ``changed``)."""
    out = {"json": fr.to_json(report)}
    if "md" in formats:
        out["md"] = markdown.render_markdown(report)
    if "html" in formats:
        out["html"] = render_html(report)
    return out


def _read(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return f.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def plan(dest, report, formats=FORMATS):
    """(changed, texts, old_md): whether the files would change, the new texts, and the Markdown
    that is there now (for --diff)."""
    texts = render_all(report, formats)
    old_json = _read(os.path.join(dest, FILES["json"]))
    try:
        old = json.loads(old_json) if old_json else None
    except ValueError:
        old = None
    missing = [f for f in texts if not os.path.isfile(os.path.join(dest, FILES[f]))]
    changed = bool(missing) or not fr.same_report(old, report)
    return changed, texts, _read(os.path.join(dest, FILES["md"]))


def _atomic_write(path, text):
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_report(dest, report, formats=FORMATS, check_mode=False):
    """Write the report files into ``dest`` (created when missing) unless nothing changed.
    Returns {changed, files, diff}."""
    dest = os.path.abspath(os.path.expanduser(dest))
    changed, texts, old_md = plan(dest, report, formats)
    files = dict((f, os.path.join(dest, FILES[f])) for f in texts)
    if changed and not check_mode:
        if not os.path.isdir(dest):
            os.makedirs(dest, 0o755)
        for fmt in ("html", "md", "json"):  # JSON last: it is what decides "changed" next time
            if fmt in texts:
                _atomic_write(files[fmt], texts[fmt])
    diff = {"before_header": files.get("md", files["json"]), "after_header": files.get("md", files["json"]),
            "before": old_md or "", "after": texts.get("md", "") if changed else old_md or ""}
    return {"changed": changed, "dest": dest, "files": files, "diff": diff}
