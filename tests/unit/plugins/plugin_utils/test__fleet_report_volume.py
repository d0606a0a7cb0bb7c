# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet report of a node proven through a PersistentVolumeClaim (gds_node_probe's
storage_class): the JSON record, the Markdown table and the HTML page name the PV and its path."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import html as frh
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import markdown

NODE = {"name": "gpu-a", "mode": "compat", "reason": "nvidia_fs kernel module not loaded", "verified": True,
        "proven": True, "throughput": {"write_gbps": 1.5, "read_gbps": 2.5, "size_mb": 64}, "pod": "gds-probe-gpu-a-1",
        "failure": None, "source": "kubernetes",
        "volume": {"storage_class": "nvme-gds", "claim": "gds-probe-gpu-a-1", "pv": "nvme-gds-gpu-a-1f2e3d",
                   "path": "/mnt/nvme0", "mount_path": "/gds-volume", "released": True}}


def test_the_report_names_the_pv_a_node_was_proven_through():
    rec = fr.k8s_record(NODE)
    assert rec["volume"] == "PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds)"
    report = fr.build_report(fr.build_records([], {}, k8s_nodes=[NODE]))
    assert "| gpu-a | kubernetes via PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds) | ok | compat |" \
        in markdown.render_markdown(report)
    assert "PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds)" in frh.render_html(report)


def test_a_hostpath_probe_has_no_volume():
    assert fr.k8s_record(dict(NODE, volume=None))["volume"] is None
