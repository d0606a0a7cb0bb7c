# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet report as a Markdown table (to paste into a ticket). Controller side only; the
records and the summary come from fleet.py, the HTML page from html.py."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet


def _md_cell(value):
    text = "-" if value in (None, "") else fleet._text(value, 400)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _gbps(value):
    return "-" if value is None else "%.2f" % value


_NO_STORAGE = {"write_ratio": None, "read_ratio": None}


def render_markdown(report):
    """A Markdown table (GitHub/GitLab/Jira-friendly) to paste into a ticket."""
    s = report["summary"]
    modes = ", ".join("%s %d" % (m, n) for m, n in s["by_mode"].items() if n)
    statuses = ", ".join("%s %d" % (k, n) for k, n in s["by_status"].items() if n)
    lines = [
        "### %s" % _md_cell(report.get("title")),
        "",
        "%d hosts, %d ready for GDS. Modes: %s. Run status: %s.%s" % (
            s["hosts"], s["gds_ready"], modes or "none", statuses or "none",
            " Generated %s." % report["generated"] if report.get("generated") else ""),
        "",
        "| host | source | status | mode | write GB/s | read GB/s | storage GB/s w / r | GPU/storage w / r "
        "| throughput mode GB/s w / r | driver | nvidia_fs | libcufile | MOFED | reason |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- |",
    ]
    for r in report["hosts"]:
        v = r["versions"]
        driver = v.get("nvidia_driver")
        if driver and v.get("nvidia_kernel_module"):
            driver = "%s (%s)" % (driver, v["nvidia_kernel_module"])
        reason = "" if r["mode"] == "gds" and r["status"] == "ok" else r["reason"]
        lines.append("| %s |" % " | ".join(_md_cell(c) for c in (
            r["host"], r.get("source", "ssh"), r["status"], r["mode"], _gbps(r["throughput"]["write_gbps"]),
            _gbps(r["throughput"]["read_gbps"]), fleet.pair_text(r.get("storage")), fleet.ratio_text(r.get("storage") or _NO_STORAGE),
            fleet.pair_text(r.get("tuned")), driver, v.get("nvidia_fs"), v.get("libcufile"), v.get("ofed"),
            reason)))
    if any((r.get("storage") or _NO_STORAGE)["read_ratio"] is not None for r in report["hosts"]):
        lines += ["", fleet.RATIO_NOTE]
    return "\n".join(lines) + "\n"
