# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet report as a Markdown table (to paste into a ticket), rendered with a Jinja2
template. Controller side only; the records and the summary come from fleet.py, the HTML page
from html.py."""

from __future__ import annotations

import jinja2

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet

TEMPLATE = """\
### {{ report.title | cell }}

{{ s.hosts }} hosts, {{ s.gds_ready }} ready for GDS. \
Modes: {{ s.by_mode | counts or "none" }}. Run status: {{ s.by_status | counts or "none" }}.\
{% if report.generated %} Generated {{ report.generated }}{% if playbooks %} by {{ playbooks | map("cell") | join(", ") }}{% endif %}.{% endif %}


| host | source | status | mode | write GB/s | read GB/s | storage GB/s w / r | GPU/storage w / r \
| throughput mode GB/s w / r | driver | nvidia_fs | libcufile | MOFED | reason |
| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- |
{% for r in report.hosts %}
| {{ [r.host, (r.source or "ssh") ~ (" via " ~ r.volume if r.volume else ""), r.status, r.mode, r.throughput.write_gbps | gbps, r.throughput.read_gbps | gbps,
      r.storage | pair, (r.storage or no_storage) | ratio, r.tuned | pair, r.versions | driver,
      r.versions.nvidia_fs, r.versions.libcufile, r.versions.ofed,
      "" if r.mode == "gds" and r.status == "ok" else r.reason] | map("cell") | join(" | ") }} |
{% endfor %}
{% if report.hosts | selectattr("storage") | map(attribute="storage.read_ratio") | reject("none") | list %}

{{ ratio_note }}
{% endif %}
"""

_NO_STORAGE = {"write_ratio": None, "read_ratio": None}


def _md_cell(value):
    text = "-" if value in (None, "") else fleet._text(value, 400)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _gbps(value):
    return "-" if value is None else "%.2f" % value


def _counts(by):
    return ", ".join("%s %d" % (k, n) for k, n in by.items() if n)


def driver_text(versions):
    """The driver version with its kernel module flavour (open / proprietary) when known."""
    driver = versions.get("nvidia_driver")
    if driver and versions.get("nvidia_kernel_module"):
        return "%s (%s)" % (driver, versions["nvidia_kernel_module"])
    return driver


_ENV = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                          undefined=jinja2.ChainableUndefined)
_ENV.filters.update(cell=_md_cell, gbps=_gbps, counts=_counts, pair=fleet.pair_text, ratio=fleet.ratio_text,
                    driver=driver_text)
_TEMPLATE = _ENV.from_string(TEMPLATE)


def render_markdown(report):
    """A Markdown table (GitHub/GitLab/Jira-friendly) to paste into a ticket."""
    return _TEMPLATE.render(report=report, s=report["summary"], no_storage=_NO_STORAGE, ratio_note=fleet.RATIO_NOTE,
                            playbooks=(report.get("run") or {}).get("playbooks") or [])
