# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The GDS fleet report as ONE self-contained HTML page. PRIVATE to the collection.

Pure: ``render_html(report)`` renders ``fleet.build_report``'s document with a Jinja2 template
(autoescape): inline CSS, a sortable table, an inline SVG throughput chart. Nothing is loaded
from anywhere (a Content-Security-Policy forbids it)."""

from __future__ import annotations

import html

import jinja2
from markupsafe import Markup

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet

MODE_COLORS = {"gds": "#1a7f37", "p2pdma": "#0969da", "compat": "#9a6700", "unavailable": "#6e7781",
               "failed": "#cf222e", "unknown": "#8250df"}
STATUS_COLORS = {"ok": "#1a7f37", "failed": "#cf222e", "unreachable": "#a40e26", "unknown": "#6e7781"}
MODE_RANK = {"gds": 5, "p2pdma": 4, "compat": 3, "unavailable": 2, "failed": 1, "unknown": 0}
WRITE_COLOR = "#0969da"
READ_COLOR = "#1a7f37"
REASON_CHARS = 240
COLUMNS = (  # key, header, sort type
    ("host", "Host", "text"), ("source", "Source", "text"), ("status", "Status", "text"), ("mode", "Mode", "num"),
    ("write", "Write GB/s", "num"), ("read", "Read GB/s", "num"),
    ("storage_ratio", "GPU/storage w / r", "num"), ("tuned", "Throughput mode GB/s w / r", "num"),
    ("driver", "Driver", "text"),
    ("nvidia_fs", "nvidia_fs", "text"), ("libcufile", "libcufile", "text"), ("ofed", "MOFED", "text"),
    ("gpus", "GPUs", "num"), ("reason", "Reason", "text"),
)

CSS = """
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2328;background:#fff}
body{margin:0 auto;padding:20px 28px;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px}
.meta{color:#59636e;font-size:13px;margin:0}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin-top:14px}
.card{border:1px solid #d1d9e0;border-left:6px solid var(--c);border-radius:6px;padding:8px 14px;min-width:92px}
.card .n{display:block;font-size:24px;font-weight:600}.card .l{font-size:12px;color:#59636e}
.status-line{font-size:13px;margin-top:8px;color:#59636e}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #d1d9e0;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none;white-space:nowrap;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason{max-width:460px;color:#59636e}td.host{white-space:nowrap;font-weight:600}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;color:#fff;font-size:12px;background:var(--c)}
#reasons li{margin:6px 0;font-size:13px}#reasons .checks{color:#59636e;margin:2px 0 0 0}
.empty{color:#59636e;font-size:13px}
svg text{font-family:inherit}
"""

JS = """
(function(){
  var table=document.getElementById('hosts');if(!table)return;
  var tbody=table.tBodies[0],heads=table.tHead.rows[0].cells;
  function val(row,i,type){var v=row.cells[i].getAttribute('data-v');
    if(type==='num'){return v===''?-1:parseFloat(v);}return (v||'').toLowerCase();}
  function sortBy(i,desc){var type=heads[i].getAttribute('data-type');
    var rows=Array.prototype.slice.call(tbody.rows);
    rows.sort(function(a,b){var x=val(a,i,type),y=val(b,i,type),c=x<y?-1:(x>y?1:0);
      if(c===0){c=a.getAttribute('data-host')<b.getAttribute('data-host')?-1:1;return c;}
      return desc?-c:c;});
    rows.forEach(function(r){tbody.appendChild(r);});
    for(var j=0;j<heads.length;j++){heads[j].removeAttribute('aria-sort');}
    heads[i].setAttribute('aria-sort',desc?'descending':'ascending');}
  for(var i=0;i<heads.length;i++){(function(i){heads[i].addEventListener('click',function(){
    sortBy(i,heads[i].getAttribute('aria-sort')==='ascending');});})(i);}
  var m=/sort=(-?)([a-z_]+)/.exec(window.location.hash||'');
  if(m){for(var k=0;k<heads.length;k++){if(heads[k].getAttribute('data-key')===m[2]){sortBy(k,m[1]==='-');}}}
})();
"""


TEMPLATE = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ report.title }}</title><style>{{ css }}</style></head><body>
<header><h1>{{ report.title }}</h1><p class="meta">{{ s.hosts }} hosts &middot; {{ s.gds_ready }} ready for GDS
{%- if report.generated %} &middot; generated {{ report.generated }}{% endif %}
{%- if playbooks %} &middot; {{ playbooks | join(", ") }}{% endif %}</p></header>
<section id="summary"><div class="cards">
{%- for m, n in s.by_mode.items() if n or m in ("gds", "compat", "unavailable", "failed") -%}
<div class="card" data-mode="{{ m }}" style="--c:{{ mode_color(m) }}"><span class="n">{{ n }}</span><span class="l">{{ m }}</span></div>
{%- endfor -%}
</div><p class="status-line">Run status: {{ s.by_status | counts or "no hosts" }}</p></section>
<section id="throughput"><h2>cuFile probe throughput (GB/s)</h2>
{%- if not chart.bars -%}
<p class="empty" id="chart-empty">No host ran the cuFile probe, so there is no throughput to chart.</p>
{%- else -%}
<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{{ chart.width }}" height="{{ chart.height }}" \
viewBox="0 0 {{ chart.width }} {{ chart.height }}" role="img" aria-label="Probe throughput per host in GB/s">
{%- for label, color, x in chart.legend -%}
<rect x="{{ x }}" y="4" width="10" height="10" fill="{{ color }}"/><text x="{{ x + 14 }}" y="13" font-size="12">{{ label }}</text>
{%- endfor -%}
{%- for t in chart.ticks -%}
<line x1="{{ t.x }}" y1="{{ chart.top }}" x2="{{ t.x }}" y2="{{ chart.axis_y }}" stroke="#d1d9e0"/>\
<text x="{{ t.x }}" y="{{ chart.axis_y + 14 }}" font-size="11" text-anchor="middle" fill="#59636e">{{ t.label }}</text>
{%- endfor -%}
{%- for host in chart.hosts -%}
<text x="{{ chart.label_x }}" y="{{ host.y }}" font-size="12" text-anchor="end" dominant-baseline="middle">{{ host.name }}</text>
{%- for b in host.bars -%}
<rect class="bar" data-host="{{ b.host }}" data-kind="{{ b.kind }}" x="{{ chart.label_w }}" y="{{ b.y }}" \
width="{{ b.w }}" height="{{ chart.bar_h - 1 }}" fill="{{ b.color }}">\
<title>{{ b.host }} {{ b.kind }} {{ b.value }} GB/s ({{ b.mode }})</title></rect>\
<text x="{{ b.text_x }}" y="{{ b.text_y }}" font-size="10" dominant-baseline="middle" fill="#59636e">{{ b.value }}</text>
{%- endfor -%}
{%- endfor -%}
</svg>
{%- if chart.missing -%}
<p class="empty">{{ chart.missing }} host(s) have no throughput (no probe ran): see the table.</p>
{%- endif -%}
{%- endif -%}
</section>
<section><h2>Hosts</h2><table id="hosts"><thead><tr>
{%- for key, head, type in columns -%}
<th data-key="{{ key }}" data-type="{{ type }}" scope="col">{{ head }}</th>
{%- endfor -%}
</tr></thead><tbody>
{%- for row in rows -%}
<tr data-host="{{ row.host }}" data-status="{{ row.status }}" data-mode="{{ row.mode }}">
{%- for c in row.cells -%}
<td data-key="{{ c.key }}" data-v="{{ c.sort }}"{% if c.cls %} class="{{ c.cls }}"{% endif %}>{{ c.shown }}</td>
{%- endfor -%}
</tr>
{%- endfor -%}
</tbody></table></section>
<section id="reasons"><h2>Why hosts are not GDS</h2>
{%- if not reasons -%}
<p class="empty">Every host does GDS.</p>
{%- else -%}
<ul>
{%- for rec, checks in reasons -%}
<li id="reason-{{ rec.host }}" data-host="{{ rec.host }}"><b>{{ rec.host }}</b> {{ badge(rec.mode, mode_color(rec.mode)) }} \
{{ badge(rec.status, status_color(rec.status)) }} <span class="reason">{{ rec.reason or "no reason given" }}</span>
{%- if checks -%}
<ul class="checks">{% for c in checks %}<li>{{ c.check }}: {{ c.detail }}</li>{% endfor %}</ul>
{%- endif -%}
</li>
{%- endfor -%}
</ul>
{%- endif -%}
</section>
<script>{{ js }}</script></body></html>
"""


def _e(value):
    """``value`` as HTML text: markup built here stays as it is, anything else is escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def _gbps(value):
    return "-" if value is None else "%.2f" % value


def _badge(text, color):
    return Markup('<span class="badge" style="--c:%s">%s</span>' % (color, _e(text)))


def _driver(versions):
    driver = versions.get("nvidia_driver")
    if driver and versions.get("nvidia_kernel_module"):
        return "%s (%s)" % (driver, versions["nvidia_kernel_module"])
    return driver


def _short(text, limit=REASON_CHARS):
    """The reason for the table cell: cut at ``limit`` characters, the whole text in a tooltip
    (and in the "why" section below the table)."""
    if len(text) <= limit:
        return _e(text)
    return Markup('<span title="%s">%s&hellip;</span>' % (_e(text), _e(text[:limit].rstrip())))


def _storage_cell(storage):
    """probe / storage ratios (sorted by the read ratio), the storage's GB/s in the tooltip."""
    storage = storage or {"write_gbps": None, "read_gbps": None, "write_ratio": None, "read_ratio": None}
    shown = _e(fleet.ratio_text(storage))
    if storage["write_gbps"] is not None or storage["read_gbps"] is not None:
        shown = Markup('<span title="storage (O_DIRECT into host memory, same file, same run): %s GB/s write / read. '
                       '%s">%s</span>' % (_e(fleet.pair_text(storage)), _e(fleet.RATIO_NOTE), shown))
    return ("storage_ratio", "" if storage["read_ratio"] is None else storage["read_ratio"], shown, "num")


def _tuned_cell(tuned):
    """The throughput mode's GB/s (sorted by read), its plans in the tooltip."""
    if not tuned:
        return ("tuned", "", "-", "num")
    shown = Markup('<span title="plans: write %s, read %s">%s</span>' % (
        _e(tuned.get("write_plan")), _e(tuned.get("read_plan")), _e(fleet.pair_text(tuned))))
    return ("tuned", "" if tuned["read_gbps"] is None else tuned["read_gbps"], shown, "num")


def _row(rec):
    """A table row: (key, sort value, shown - text, or markup built here -, class) per cell."""
    v = rec["versions"]
    t = rec["throughput"]
    good = rec["mode"] == "gds" and rec["status"] == "ok"
    source = _e(rec.get("source", "ssh"))
    if rec.get("pod"):
        source = Markup('%s <span class="reason">%s</span>' % (source, _e(rec["pod"])))
    if rec.get("volume"):
        source = Markup('%s <span class="reason">%s</span>' % (source, _e(rec["volume"])))
    cells = [
        ("host", rec["host"], rec["host"], "host"),
        ("source", rec.get("source", "ssh"), source, ""),
        ("status", rec["status"], _badge(rec["status"], STATUS_COLORS.get(rec["status"], "#6e7781")), ""),
        ("mode", MODE_RANK.get(rec["mode"], 0), _badge(rec["mode"], MODE_COLORS.get(rec["mode"], "#6e7781")), ""),
        ("write", "" if t["write_gbps"] is None else t["write_gbps"], _gbps(t["write_gbps"]), "num"),
        ("read", "" if t["read_gbps"] is None else t["read_gbps"], _gbps(t["read_gbps"]), "num"),
        _storage_cell(rec.get("storage")),
        _tuned_cell(rec.get("tuned")),
        ("driver", _driver(v) or "", _driver(v) or "-", ""),
        ("nvidia_fs", v.get("nvidia_fs") or "", v.get("nvidia_fs") or "-", ""),
        ("libcufile", v.get("libcufile") or "", v.get("libcufile") or "-", ""),
        ("ofed", v.get("ofed") or "", v.get("ofed") or "-", ""),
        ("gpus", len(rec["gpus"]), len(rec["gpus"]) if rec["mode"] != "unknown" else "-", "num"),
        ("reason", "" if good else rec["reason"], "" if good else _short(rec["reason"]), "reason"),
    ]
    return {"host": rec["host"], "status": rec["status"], "mode": rec["mode"],
            "cells": [{"key": k, "sort": sv, "shown": shown, "cls": cls} for k, sv, shown, cls in cells]}


def _ticks(top):
    """Round axis ticks from 0 to at least ``top`` GB/s."""
    if top <= 0:
        return [0, 1]
    for step in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100):
        if top / step <= 6:
            break
    n = int(top / step) + (0 if abs(top / step - int(top / step)) < 1e-9 else 1)
    return [round(step * i, 2) for i in range(n + 1)]


def chart(records, width=900):
    """The geometry of the throughput chart: horizontal grouped bars (write, read GB/s) per probed
    host; no bars when no host ran the probe."""
    probed = [r for r in records if r["throughput"]["write_gbps"] is not None or r["throughput"]["read_gbps"] is not None]
    if not probed:
        return {"bars": False}
    label_w, right, top_pad, bar_h, gap = 180, 60, 28, 11, 10
    ticks = _ticks(max([r["throughput"]["write_gbps"] or 0 for r in probed] +
                       [r["throughput"]["read_gbps"] or 0 for r in probed]))
    scale = (width - label_w - right) / float(ticks[-1] or 1)
    height = top_pad + len(probed) * (2 * bar_h + gap) + 24
    hosts = []
    for i, rec in enumerate(probed):
        y = top_pad + i * (2 * bar_h + gap)
        bars = []
        for j, (key, color, kind) in enumerate((("write_gbps", WRITE_COLOR, "write"), ("read_gbps", READ_COLOR, "read"))):
            val = rec["throughput"][key]
            if val is None:
                continue
            w = max(val * scale, 1.0)
            bars.append({"host": rec["host"], "kind": kind, "y": y + j * bar_h, "w": "%.1f" % w, "color": color,
                         "value": "%.2f" % val, "mode": rec["mode"], "text_x": "%.1f" % (label_w + w + 4),
                         "text_y": y + j * bar_h + bar_h // 2})
        hosts.append({"name": rec["host"] if len(rec["host"]) <= 26 else rec["host"][:25] + "\u2026",
                      "y": y + bar_h, "bars": bars})
    return {"bars": True, "width": width, "height": height, "top": top_pad - 4, "axis_y": height - 20,
            "label_w": label_w, "label_x": label_w - 8, "bar_h": bar_h,
            "legend": [("write", WRITE_COLOR, label_w), ("read", READ_COLOR, label_w + 64)],
            "ticks": [{"x": "%.1f" % (label_w + t * scale), "label": "%g" % t} for t in ticks],
            "hosts": hosts, "missing": len(records) - len(probed)}


def _repeats(detail, reason):
    """True when a failed check only repeats the failure message the reason already quotes."""
    if detail.startswith("unreachable: "):
        detail = detail[len("unreachable: "):]
    return bool(detail) and detail in reason


def _reasons(records):
    """(record, its failed checks that say more than the reason) of every host that is not gds."""
    return [(rec, [c for c in rec["failed_checks"] if not _repeats(c["detail"], rec["reason"])])
            for rec in records if not (rec["mode"] == "gds" and rec["status"] == "ok")]


# every value a template prints goes through _e (as html.escape writes entities); markup built
# here passes as it is
_ENV = jinja2.Environment(finalize=_e, keep_trailing_newline=True, undefined=jinja2.ChainableUndefined)
_ENV.filters["counts"] = lambda by: ", ".join("%s %d" % (k, n) for k, n in by.items() if n)
_TEMPLATE = _ENV.from_string(TEMPLATE)


def render_html(report):
    """The whole page."""
    records = report["hosts"]
    return _TEMPLATE.render(
        report=report, s=report["summary"], css=Markup(CSS), js=Markup(JS),
        playbooks=(report.get("run") or {}).get("playbooks") or [], columns=COLUMNS, chart=chart(records),
        rows=[_row(r) for r in records], reasons=_reasons(records), badge=_badge,
        mode_color=lambda m: MODE_COLORS.get(m, "#6e7781"), status_color=lambda m: STATUS_COLORS.get(m, "#6e7781"))
