# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The run journal: written by the ``gds_report`` callback, read by the ``gds_report`` action.
PRIVATE to the collection. CONTROLLER side.

A JSON-lines file whose first line names its run. The callback registers it here
(:func:`start_run`) in the main ``ansible-playbook`` process; action plugins run in workers forked
from it, so :func:`current` sees this run's journal and no other. Nothing goes into the
environment: a nested ``ansible-playbook`` never sees it, and :func:`read` refuses a file whose
start line names another run."""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import uuid

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.fleet import parse_journal

NO_JOURNAL = "no run journal: enable the gpudirect.storage.gds_report callback to see why hosts failed"


class RunJournal(object):
    """One run's journal file, readable by its owner only. ``temporary``: created by
    :func:`start_run` without a configured path in a private directory, both removed at the end
    of the run."""

    def __init__(self, path, run_id, temporary=False):
        self.path, self.run_id, self.temporary = path, run_id, temporary

    def append(self, event):
        """Add one event (a dict). Raises OSError when the file cannot be written."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, sort_keys=True, default=str) + "\n")

    def text(self):
        """The journal so far ("" when the file is gone)."""
        if not os.path.exists(self.path):
            return ""
        with open(self.path, "r", encoding="utf-8") as f:
            return f.read()

    def remove(self):
        """Remove the file and its private directory if it is temporary (a configured journal is kept)."""
        if not self.temporary:
            return
        for remove, path in ((os.unlink, self.path), (os.rmdir, os.path.dirname(self.path))):
            try:
                remove(path)
            except FileNotFoundError:
                pass


def _create(path, first_line):
    """Create or truncate the journal file at ``path`` as a 0600 file (a link there is refused)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)  # a journal kept from an older run may have been readable by others
        f.write(first_line)


_current = None  # the RunJournal of this ansible-playbook run, in its main process and its forks


def start_run(path=None):
    """Create (or truncate) the journal of a new run and register it as the current one.
    ``path``: the callback's ``journal`` option; None for a temporary file."""
    global _current  # pylint: disable=global-statement
    run_id = uuid.uuid4().hex
    if path:
        path = os.path.abspath(os.path.expanduser(path))
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o700)
        run = RunJournal(path, run_id)
    else:  # a directory of our own: the file is then used by its name safely
        path = os.path.join(tempfile.mkdtemp(prefix="gds-report-journal."), "journal.jsonl")
        run = RunJournal(path, run_id, temporary=True)
        atexit.register(run.remove)  # also when the run is interrupted before its stats
    _create(path, json.dumps({"event": "start", "run_id": run_id, "pid": os.getpid()}) + "\n")
    _current = run
    return run


def current():
    """The RunJournal of this run, or None when the callback is not enabled."""
    return _current


def end_run():
    """Unregister the current journal and remove it if it is temporary."""
    global _current  # pylint: disable=global-statement
    run, _current = _current, None
    if run is not None:
        run.remove()


def read(path, run_id=None):
    """(events, note): the journal's events, or [] with the reason it was not used. ``run_id``:
    the run the journal must belong to (None: any, for a path the user named)."""
    if not path:
        return [], NO_JOURNAL
    try:
        with open(path, "r", encoding="utf-8") as f:
            events = parse_journal(f.read())
    except (IOError, OSError) as exc:
        return [], "run journal %s unreadable: %s" % (path, exc)
    start = next((e for e in events if e.get("event") == "start"), {})
    if run_id and start.get("run_id") != run_id:
        return [], "run journal %s belongs to another run" % path
    return events, None


def read_for_report(path=None):
    """(path, events, note) for the report: the journal at ``path`` when the user named one,
    else this run's journal (:func:`current`), checked to be of this run."""
    if path:
        return (path,) + read(path)
    run = current()
    if run is None:
        return (None,) + read(None)
    return (run.path,) + read(run.path, run.run_id)
