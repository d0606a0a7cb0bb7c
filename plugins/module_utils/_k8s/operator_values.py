# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU Operator values and GDS preflight: pure functions. PRIVATE to the collection.

``option_values`` maps the ``gds``/``rdma``/``driver`` options onto the chart's value paths;
``desired_values`` merges them with values files and ``values`` like helm does, refusing a
contradiction; ``preflight`` checks, by chart version, what would break GDS before helm runs.
Messages name values in YAML terms (``gds.enabled: true``)."""

from __future__ import annotations

import json
import re

from ansible.module_utils.common.dict_transformations import dict_merge  # helm -f: maps merge, the rest replaces
from ansible_collections.gpudirect.storage.plugins.module_utils._common import os_policy
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.readiness import (
    gpu_candidates, node_config, node_os, os_text)

OPEN_MODULE_MIN_GDS = (2, 17, 5)
# chart v25.3.0 added driver.kernelModuleType and made driver.useOpenKernelModules a no-op
KERNEL_MODULE_TYPE_CHART = (25, 3, 0)
_YAML_SPECIAL = re.compile(r"^(?:y|n|yes|no|true|false|on|off|null|~|[-+]?(?:\d[\d_]*)?\.?\d+(?:[eE][-+]?\d+)?"
                           r"|0x[0-9a-fA-F]+|0o?[0-7]+|[-+]?\.(?:inf|nan))$", re.IGNORECASE)
# NFD os_release ID -> supported VERSION_IDs (None: any): the GPU Operator column of the
# collection's one OS table (_common/os_policy.py)
GDS_SUPPORTED_OS = os_policy.supported_os("gpu_operator")

# option path -> chart value path
OPTION_PATHS = (
    (("gds", "enabled"), ("gds", "enabled")),
    (("gds", "version"), ("gds", "version")),
    (("gds", "repository"), ("gds", "repository")),
    (("gds", "image"), ("gds", "image")),
    (("rdma", "enabled"), ("driver", "rdma", "enabled")),
    (("rdma", "use_host_mofed"), ("driver", "rdma", "useHostMofed")),
    (("driver", "version"), ("driver", "version")),
    (("driver", "kernel_module_type"), ("driver", "kernelModuleType")),
)


# chart switches whose value must be a boolean (a string is truthy in the chart's "if")
SWITCHES = (("gds", "enabled"), ("driver", "enabled"), ("driver", "usePrecompiled"), ("driver", "rdma", "enabled"),
            ("driver", "rdma", "useHostMofed"), ("driver", "nvidiaDriverCRD", "enabled"),
            ("driver", "nvidiaDriverCRD", "deployDefaultCR"))


class ValuesError(ValueError):
    """Values that cannot be used; the message names the option / path."""


def _get(tree, path):
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None, False
        node = node[key]
    return node, True


def _set(tree, path, value):
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def yaml_scalar(value):
    """A scalar as YAML writes it: true, null, 2, 2.29.4, "false" (a string that would read as
    something else is quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    if not text or _YAML_SPECIAL.match(text) or text != text.strip() or text[0] in "!&*{}[]|>'\"%@`#,?:-" \
            or ": " in text or " #" in text:
        return json.dumps(text)
    return text


def option_values(options):
    """{'gds': {...}, 'rdma': {...}, 'driver': {...}} (None = not set) -> (values tree, sources)."""
    tree, sources = {}, {}
    for opt_path, value_path in OPTION_PATHS:
        value = _get(options or {}, opt_path)[0]
        if value is not None:
            _set(tree, value_path, value)
            sources[value_path] = ".".join(opt_path)
    return tree, sources


def desired_values(files, values, options):
    """Merge ``files`` ([(name, dict)]), then ``values``, then the options (``gds.enabled`` true unless
    one says otherwise). An option that contradicts ``values`` or a file is a ValuesError naming both."""
    merged = {}
    for name, content in files or []:
        if content is None:
            continue
        if not isinstance(content, dict):
            raise ValuesError("values_files: %s does not hold a mapping of values" % name)
        merged = dict_merge(merged, content)
    if values is not None and not isinstance(values, dict):
        raise ValuesError("values must be a dictionary")
    merged = dict_merge(merged, values or {})
    opts, sources = option_values(options)
    for value_path, option in sources.items():
        have, found = _get(merged, value_path)
        want = _get(opts, value_path)[0]
        if found and have is not None and str(have).lower() != str(want).lower():
            raise ValuesError("option %s: %s contradicts values %s: %s; set it in one place only"
                              % (option, yaml_scalar(want), ".".join(value_path), yaml_scalar(have)))
    result = dict_merge(merged, opts)
    if _get(result, ("gds", "enabled"))[0] is None:
        _set(result, ("gds", "enabled"), True)  # the module's default, unlike the chart's
    for path in SWITCHES:
        value = _get(result, path)[0]
        if isinstance(value, str):
            raise ValuesError("values %s: %s is a string, not a boolean: the chart reads a non-empty string as true "
                              "in its conditions and writes the text into the ClusterPolicy; write %s: %s "
                              "without quotes" % (".".join(path), yaml_scalar(value), ".".join(path),
                                                  "true" if _truthy(value) else "false"))
    return result


def gds_settings(values):
    """(enabled, version or None) as the chart will see them (chart default: enabled)."""
    enabled, found = _get(values, ("gds", "enabled"))
    version = _get(values, ("gds", "version"))[0]
    return (True if not found or enabled is None else _truthy(enabled)), (str(version) if version else None)


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def parse_gds_version(text):
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def os_supported(os_info):
    return os_policy.os_supported(os_info.get("id"), os_info.get("version_id"), GDS_SUPPORTED_OS)


def parse_chart_version(text):
    """'v26.7.0' / '26.7.0-test.1' -> (26, 7, 0); None for a development build ('v1.0.0-devel'
    from a git checkout) or anything unparseable: treated as the newest chart."""
    parsed = parse_gds_version(text)
    return parsed if parsed and parsed[0] >= 20 else None


def _flag(values, path):
    value, found = _get(values, path)
    return None if not found or value is None else _truthy(value)


def _module_type_checks(values, version, chart_version, options=()):
    """(errors, warnings) about the kernel module flavour, as the chart in use reads it;
    ``options``: the value paths set through the module's options (the fix is told there)."""
    errors, warnings = [], []
    parsed = parse_gds_version(version) if version else None
    needs_open = parsed is None or parsed >= OPEN_MODULE_MIN_GDS
    chart = parse_chart_version(chart_version)
    new_chart = chart is None or chart >= KERNEL_MODULE_TYPE_CHART
    chart_text = chart_version or "(version unknown)"
    module_type = _get(values, ("driver", "kernelModuleType"))[0]
    use_open = _flag(values, ("driver", "useOpenKernelModules"))
    gds_text = version or "(chart default, >= 2.17.5)"
    if new_chart:
        if use_open is not None:
            warnings.append("driver.useOpenKernelModules is a no-op in chart %s (since v25.3.0 "
                            "driver.kernelModuleType decides); it is ignored" % chart_text)
        if needs_open and module_type is not None and str(module_type).lower() == "proprietary":
            errors.append("GDS %s needs the open NVIDIA kernel module but driver.kernelModuleType: proprietary; "
                          "%s" % (gds_text, "use driver.kernel_module_type: open (or auto)"
                                  if ("driver", "kernelModuleType") in options else
                                  "set driver.kernelModuleType: open (or auto) in values"))
    else:
        if module_type is not None:
            warnings.append("driver.kernelModuleType is not read by chart %s (added in v25.3.0); "
                            "driver.useOpenKernelModules decides" % chart_text)
        if needs_open and use_open is False:
            errors.append("GDS %s needs the open NVIDIA kernel module but driver.useOpenKernelModules: false "
                          "(chart %s honours it); set driver.useOpenKernelModules: true" % (gds_text, chart_text))
    return errors, warnings


def planned_driver_config(values, drivers):
    """(ClusterPolicy, NVIDIADrivers) as the operator will see them once helm applied ``values``:
    in NVIDIADriver mode the CRs helm does not manage plus the chart's default CR
    (``driver.nvidiaDriverCRD.deployDefaultCR``, rendered from ``gds``/``driver.rdma``)."""
    enabled = gds_settings(values)[0]
    gds = dict(_get(values, ("gds",))[0] or {}, enabled=enabled)
    rdma = {"enabled": bool(_flag(values, ("driver", "rdma", "enabled")))}
    crd_mode = bool(_flag(values, ("driver", "nvidiaDriverCRD", "enabled")))
    policy = {"metadata": {"name": "(from values)"},
              "spec": {"gds": gds, "driver": {"useNvidiaDriverCRD": crd_mode, "rdma": rdma}}}
    if not crd_mode:
        return policy, []
    planned = [d for d in drivers or [] if "meta.helm.sh/release-name" not in
               ((d.get("metadata") or {}).get("annotations") or {})]
    if _flag(values, ("driver", "nvidiaDriverCRD", "deployDefaultCR")) is not False:
        planned.append({"metadata": {"name": "default"},
                        "spec": {"default": True, "gds": gds if enabled else {}, "rdma": rdma}})
    return policy, planned


def preflight(values, nodes, unsupported_os="warn", chart_version=None, drivers=None, options=()):
    """{errors, warnings, nodes: [{name, os, os_supported, gds_expected}]} of the merged ``values``
    against the cluster's nodes, NVIDIADriver CRs and chart version. The OS is checked only on the
    nodes meant to get GDS, the driver settings only when the values enable GDS."""
    errors, warnings, reports = [], [], []
    enabled, version = gds_settings(values)
    policy, planned = planned_driver_config(values, drivers)
    for node in gpu_candidates(nodes):
        info = node_os(node)
        reports.append({"name": node["metadata"]["name"], "os": os_text(info),
                        "os_supported": os_supported(info) if info.get("id") else None,
                        "gds_expected": node_config(policy, planned, node)["gds"]})
    if not enabled and version:
        warnings.append("gds.version is %s but gds.enabled: false: no node gets nvidia-fs from the operator"
                        % yaml_scalar(version))
    if enabled:
        errors_, warnings_ = _driver_checks(values, version, chart_version, options)
        errors.extend(errors_)
        warnings.extend(warnings_)
    meant = [r for r in reports if r["gds_expected"]]
    unknown = [r["name"] for r in meant if r["os_supported"] is None]
    bad = ["%s (%s)" % (r["name"], r["os"]) for r in meant if r["os_supported"] is False]
    if unknown:
        warnings.append("cannot check the OS of GPU nodes %s: NFD labels %s missing"
                        % (", ".join(unknown), "feature.node.kubernetes.io/system-os_release.ID"))
    if bad:
        text = ("GDS is supported by the GPU Operator only on Ubuntu 22.04/24.04 and RHCOS; enabling it on "
                "GPU nodes %s makes nvidia-fs-ctr fail and breaks the GPU operands there (gpu-operator #2911)"
                % ", ".join(bad))
        (errors if unsupported_os == "fail" else warnings).append(text)
    return {"errors": errors, "warnings": warnings, "nodes": reports}


def _driver_checks(values, version, chart_version, options):
    """(errors, warnings) about the driver GDS runs with."""
    errors = []
    if _flag(values, ("driver", "enabled")) is False:
        errors.append("GDS needs the driver the GPU Operator manages, but driver.enabled: false: the operator then "
                      "runs no driver stage and nvidia-fs-ctr never starts; set driver.enabled: true (or "
                      "gds.enabled: false and GDS installed on the hosts)")
    if _flag(values, ("driver", "usePrecompiled")):
        errors.append("the GPU Operator rejects GDS with a precompiled driver (driver.usePrecompiled: true); "
                      "set driver.usePrecompiled: false")
    more_errors, warnings = _module_type_checks(values, version, chart_version, options)
    return errors + more_errors, warnings
