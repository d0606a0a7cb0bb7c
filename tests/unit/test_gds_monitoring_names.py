"""Every metric the Grafana dashboard and the alert rules query is one the collector writes, one
the rules produce (ALERTS), or one of the few named below from node_exporter and kube-state-metrics."""

import json
import os
import re

import pytest
import yaml

from ansible_collections.gpudirect.storage.tests.unit.test_gds_monitoring_collector import ROOT, collector

DASHBOARD = os.path.join(ROOT, "prometheus", "grafana", "gds-fleet.json")
RULES = os.path.join(ROOT, "prometheus", "rules", "gds.rules.yml")
# produced by Prometheus for the alerting rules, by node_exporter's textfile collector, by kube-state-metrics
OTHERS = {"ALERTS", "ALERTS_FOR_STATE", "node_textfile_mtime_seconds", "kube_node_labels", "kube_node_annotations"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool"}


def metric_names(expr):
    """The metric names a PromQL expression selects: strings, label matchers, ranges and the label
    lists of by/on/... removed; what is left that is neither a call nor a keyword is a metric."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"\boffset\s+\w+", " ", expr)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word, rest = m.group(0), expr[m.end():].lstrip()
        if rest.startswith("(") or word in KEYWORDS or re.match(r"^\d", word) or expr[m.start() - 1:m.start()].isdigit():
            continue
        names.add(word)
    return names


def dashboard_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    return [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]


def rule_queries():
    with open(RULES) as f:
        return [(r.get("alert") or r.get("record"), r["expr"]) for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def test_the_name_finder():
    expr = ('sum by (instance, counter) (rate(gds_nvidia_fs_errors_total{counter=~"dma.*"}[5m])) > 0 '
            'and on (job) x_total offset 7d or vector(1) * 86400')
    assert metric_names(expr) == {"gds_nvidia_fs_errors_total", "x_total"}


@pytest.mark.parametrize("title, expr", dashboard_queries() + rule_queries())
def test_every_query_names_metrics_that_exist(title, expr):
    names = metric_names(expr)
    assert names, (title, expr)
    assert names <= set(collector.METRICS) | OTHERS, (title, names - set(collector.METRICS) - OTHERS)


def test_the_dashboard_shows_modes_throughput_errors_and_stale_hosts():
    exprs = " ".join(e for _t, e in dashboard_queries())
    for name in ("gds_verdict_mode", "gds_verdict_read_bytes_per_second", "gds_nvidia_fs_errors_total",
                 "gds_verdict_timestamp_seconds"):
        assert name in exprs
    with open(DASHBOARD) as f:
        dash = json.load(f)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) and dash["uid"]
