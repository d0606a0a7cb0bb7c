# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bad input for every module: hypothesis draws an invalid value for one option of a
valid task (wrong type, a value outside the choices, an unknown option, a missing or conflicting
option, a value the module must refuse: a package spec apt would read as an option, a newline that
would add ``Trusted: yes`` to a repository file, a path outside sources.list.d, ...).

Every module runs in-process (module_harness.run_module) against a re-rooted fake host: the
FakeHost of the mofed/nvidia_fs tests, the stand-in host of gds_facts, a temp dir for
cufile_config, the fake helm + API of the gpu_operator tests, the action plugin of
gds_report. Each invalid input must fail with a message naming the option, without a
traceback, and change nothing (host tree, package db, no mutating command). The counts go to the
reliability summary (tests/system/_reliability.py). cufile.json *content* is fuzzed by the
cufile_config suite (tests/unit/plugins/module_utils/test__cufile_validate_bad.py).
"""

from __future__ import annotations

import copy
import os
import pathlib
import re
import shutil
import string
import tempfile
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_backend
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts as _gds_gather
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos
from ansible_collections.gpudirect.storage.plugins.modules import (cufile_config, gds_facts, gds_report,
                                                                   gds_node_probe, gds_plan, gds_preflight, gpu_operator,
                                                                   mofed, nvidia_fs)
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import FakeHost

# No NUL characters: ansible-core 2.21 fails on a NUL while logging the invocation to syslog,
# before the module's own validation runs (nothing is written either way).
_TEXT_ALPHABET = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))


def _text(**kwargs):
    return st.text(alphabet=_TEXT_ALPHABET, **kwargs)


MAX_EXAMPLES = 120
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
REPO = {"path": "/srv/gds-repo", "suite": "./", "signed_by": "/etc/apt/keyrings/gds.asc"}
BOOLEANS = {"y", "yes", "on", "1", "true", "t", "n", "no", "off", "0", "false", "f"}
LETTERS = st.text(alphabet=string.ascii_letters, min_size=1, max_size=8)
METACHARS = [" ", "\n", "\t", ";", "|", "&", "'", "\"", "*", "\r", "$", "`", "<", ">"]
# never a package name, version or repository file name: whitespace, a leading '-', shell and
# deb822 metacharacters, a path, or empty
BAD_TOKEN = st.one_of(
    st.sampled_from(["", " ", "-o=APT::Get::AllowUnauthenticated=1", "--allow-unauthenticated", "a b",
                     "x\nTrusted: yes", "pkg;id", "$(id)", "`id`", "../../etc/x", "-", "\t"]),
    st.tuples(st.sampled_from(["-", "", "a", "../"]), _text(max_size=6), st.sampled_from(METACHARS),
              _text(max_size=6)).map("".join))
# never one http(s):// or file: URL
BAD_URL = st.one_of(BAD_TOKEN, st.sampled_from(["ftp://x", "http://a b", "http://x/\nTrusted: yes", "http://", "file:"]),
                    st.tuples(st.just("https://h/"), _text(max_size=4), st.sampled_from(METACHARS[:3] + ["\x0b"]))
                    .map("".join))
# never an absolute path without whitespace
BAD_PATH = st.one_of(_text(max_size=8).filter(lambda s: not s.startswith("/")),
                     st.tuples(st.just("/"), _text(max_size=6), st.sampled_from([" ", "\n", "\t", "\r"]),
                               _text(max_size=4)).map("".join))
# never a suite / component (letters, digits, . _ / ~ + -)
BAD_FIELD = st.one_of(st.just(""), st.tuples(_text(max_size=4), st.sampled_from(METACHARS), _text(max_size=4))
                      .map("".join))


# --------------------------------------------------------------------------- invalid values
def _not_a_float_word(text):
    """False for the words float() reads (inf, Infinity, nan): ansible-core's check_type_int raises
    OverflowError / ValueError for them instead of TypeError, a core behaviour this test does not probe."""
    try:
        float(text)
    except ValueError:
        return True
    return False


def bad_value(opt):
    """A strategy of values Ansible's argument spec must refuse for ``opt`` (None: none)."""
    kind = opt.get("type", "str")
    if opt.get("choices"):
        choices = set(str(c) for c in opt["choices"])
        bad = LETTERS.filter(lambda s: s not in choices)
        return bad.map(lambda s: [s]) if kind == "list" else bad
    if kind == "int":  # no 3-item lists: ansible-core 2.19 reads them as decimal.Decimal tuples (see docs)
        return st.one_of(LETTERS.filter(_not_a_float_word),
                         st.lists(st.integers(), min_size=1).filter(lambda v: len(v) != 3),
                         st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()))
    if kind == "bool":
        return st.one_of(LETTERS.filter(lambda s: s.lower() not in BOOLEANS), st.integers(2, 1000),
                         st.lists(st.booleans(), min_size=1))
    if kind == "list":
        return st.dictionaries(LETTERS, st.integers(), min_size=1, max_size=2)
    if kind == "dict" and not opt.get("options"):  # with suboptions: see test_core_suboption_type_error
        return st.one_of(LETTERS, st.lists(st.integers(), min_size=1, max_size=3), st.integers())
    return None


def walk(spec, prefix=()):
    for name, opt in sorted(spec.items()):
        if name.startswith("_"):
            continue
        yield prefix + (name,), opt
        yield from walk(opt.get("options") or {}, prefix + (name,))


def put(args, path, value):
    """A copy of ``args`` with ``path`` set (None removes it); parents are created."""
    out = copy.deepcopy(args)
    node = out
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return out


def cases(spec, base, semantic=()):
    """(args, needle) where args is ``base`` with one invalid input; needle is the option the
    error message must name."""
    typed = [(path, strat) for path, strat in ((p, bad_value(o)) for p, o in walk(spec)) if strat is not None]
    dict_opts = [p for p, o in walk(spec) if o.get("options")]
    names = set(spec) | set(a for o in spec.values() for a in o.get("aliases", []))
    out = [st.sampled_from(typed).flatmap(lambda pv: pv[1].map(lambda v, p=pv[0]: (put(base, p, v), p[-1]))),
           st.from_regex(r"[a-z]{3,8}_zz", fullmatch=True).filter(lambda n: n not in names)
           .map(lambda n: (put(base, (n,), "1"), n))]
    if dict_opts:
        out.append(st.sampled_from(dict_opts).map(
            lambda p: (put(put(base, p, dict(base.get(p[0]) or {}) if len(p) == 1 else {}), p + ("bogus_zz",), 1),
                       "bogus_zz")))
    out += list(semantic)
    return st.one_of(out)


class Tally(object):
    def __init__(self):
        self.tried = self.rejected = self.written = 0

    def as_dict(self):
        return {"tried": self.tried, "rejected": self.rejected, "written": self.written}


def check_case(tally, result, changes, needle):
    tally.tried += 1
    if changes:
        tally.written += 1
    if result.get("failed") and needle in result.get("msg", ""):
        tally.rejected += 1
    assert result.get("failed") is True, result
    assert "exception" not in result and "Traceback" not in result.get("msg", ""), result
    assert needle in result["msg"], (needle, result["msg"])
    assert changes == [], changes


def fuzz(record_property, strategy, attempt):
    """Run ``attempt(args, needle) -> (result, changes)`` for every drawn case; record the counts."""
    tally = Tally()

    @SETTINGS
    @given(strategy)
    def run_case(case):
        args, needle = case
        result, changes = attempt(args, needle)
        check_case(tally, result, changes, needle)

    try:
        run_case()
    finally:
        record_property("reliability_bad_inputs", tally.as_dict())
    assert tally.tried >= MAX_EXAMPLES // 2 and tally.written == 0 and tally.rejected == tally.tried


# --------------------------------------------------------------------------- mofed / nvidia_fs
def _fake_host_run(main, args, available):
    tmp = tempfile.mkdtemp(prefix="gds-fuzz-")
    try:
        with pytest.MonkeyPatch.context() as mp:
            host = FakeHost(pathlib.Path(tmp), mp)
            host.available = dict(available)
            host.write(REPO["signed_by"].lstrip("/"), "key\n")  # the repository works (it is checked first)
            (host.root / REPO["path"].lstrip("/")).mkdir(parents=True)
            before = host.snapshot()
            result = host.run(main, args)
            changes = list(host.mutating_calls())
            if host.snapshot() != before:
                changes.append("host tree / package db changed")
            return result, changes
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PKG_AVAILABLE = {"nvidia-fs-dkms": ["2.28.2-1"], "nvidia-fs": ["2.28.2-1"], "libcufile-12-8": ["1.13.1.3-1"],
                 "doca-ofed": ["3.2.1-044000-25.10-ubuntu2404"]}
NVFS_BASE = {"version": "match_driver", "params": {"rw_stats_enabled": 1}, "extra_packages": ["libcufile-12-8"],
             "lock_timeout": 5, "repo": dict(REPO)}
MOFED_BASE = {"flavour": "doca-ofed", "version": "3.2.1", "lock_timeout": 5, "repo": dict(REPO)}


def _repo(base, key, value):
    """base with repo.<key> = value (an URL replaces the path: they are mutually exclusive)."""
    args = put(base, ("repo", key), value)
    return put(args, ("repo", "path"), None) if key == "url" else args


def package_semantics(base, package_options):
    repo_bad = {"name": BAD_TOKEN, "url": BAD_URL, "path": BAD_PATH, "signed_by": BAD_PATH, "suite": BAD_FIELD}
    out = [BAD_TOKEN.map(lambda v: (put(base, ("version",), v), "version")),
           st.integers(max_value=-1).map(lambda v: (put(base, ("lock_timeout",), v), "lock_timeout")),
           st.sampled_from(sorted(repo_bad)).flatmap(
               lambda k: repo_bad[k].map(lambda v, k=k: (_repo(base, k, v), "repo." + k))),
           BAD_FIELD.map(lambda v: (put(base, ("repo", "components"), ["main", v]), "repo.components")),
           st.just((put(base, ("repo", "url"), "http://repo.invalid/"), "url")),              # url and path
           st.just((put(base, ("repo", "signed_by"), None), "signed_by")),                  # required suboption
           st.just((put(put(base, ("repo", "path"), None), ("repo", "url"), None), "url"))]  # neither url nor path
    for opt in package_options:
        out.append(st.lists(BAD_TOKEN, min_size=1, max_size=2).map(lambda v, o=opt: (put(base, (o,), ["ok-pkg"] + v), o)))
    return out


def test_fuzz_nvidia_fs_options(record_property):
    semantic = package_semantics(NVFS_BASE, ("packages", "extra_packages")) + [
        st.sampled_from([{"rw stats": 1}, {"a=b": 1}, {"x": ""}, {"x": [1]}, {"x": "a b"}, {"x": {"y": 1}}])
        .map(lambda v: (put(NVFS_BASE, ("params",), v), "params")),
        st.just((put(NVFS_BASE, ("mok_key",), "/var/lib/shim-signed/mok/MOK.priv"), "mok_key"))]  # without mok_cert
    fuzz(record_property, cases(nvidia_fs.arguments().argument_spec, NVFS_BASE, semantic),
         lambda args, _n: _fake_host_run(nvidia_fs.main, args, PKG_AVAILABLE))


def test_fuzz_mofed_options(record_property):
    semantic = package_semantics(MOFED_BASE, ("extra_packages",)) + [
        st.just((put(MOFED_BASE, ("flavour",), None), "flavour"))]
    fuzz(record_property, cases(mofed.arguments().argument_spec, MOFED_BASE, semantic),
         lambda args, _n: _fake_host_run(mofed.main, args, PKG_AVAILABLE))


def test_the_valid_bases_succeed():
    """The fuzz bases are valid: each failure above comes from the one bad input."""
    for main, base in ((nvidia_fs.main, NVFS_BASE), (mofed.main, MOFED_BASE)):
        result, _changes = _fake_host_run(main, base, PKG_AVAILABLE)
        assert not result.get("failed"), result


@pytest.mark.parametrize("params, words", [
    ({"lock_timeout": -1}, ["lock_timeout"]),
    ({"extra_packages": ["-o=Dpkg::Options::=--force-all"]}, ["extra_packages", "-o="]),
    ({"repo": dict(REPO, url="http://x/\nTrusted: yes", path=None)}, ["repo.url"]),
    ({"repo": dict(REPO, name="../../etc/apt/trusted")}, ["repo.name"]),
    ({"version": "2.28\n"}, ["version"]),
])
def test_input_problems_names_the_option(params, words):
    problems = repos.input_problems(params)
    assert len(problems) == 1 and all(w in problems[0] for w in words), problems
    assert repos.input_problems({"lock_timeout": 0, "version": "2.28.2-1", "extra_packages": ["libcufile-12-8=1.13.1.3-1"],
                                 "repo": dict(REPO, components=["main", "contrib"])}) == []


# --------------------------------------------------------------------------- gds_facts
def test_fuzz_gds_facts_options(record_property):
    from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
    limits = [st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1)).map(
        lambda v, n=name: (put({}, (n,), v), n)) for name, (low, high) in _gds_gather.LIMITS.items()]
    semantic = limits + [
        st.lists(_text(min_size=1, max_size=8).filter(lambda s: not s.startswith("/") and not s.startswith("~")),
                 min_size=1, max_size=2).map(lambda v: ({"probe_path": v}, "probe_path")),
        st.just(({"probe": True, "probe_path": []}, "probe_path"))]

    def attempt(args, _needle):
        tmp = tempfile.mkdtemp(prefix="gds-fuzz-")
        try:
            host, proc = standin.fake_host(tmp, nvidia=False)
            data = os.path.join(tmp, "data")
            os.mkdir(data)
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("GPUDIRECT_HOST_ROOT", host)
                mp.setenv("GPUDIRECT_PROC_ROOT", proc)
                result = run_module(gds_facts.main, dict({"probe_path": [data]}, **args))
            return result, os.listdir(data)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    fuzz(record_property, cases(gds_facts.argument_spec(), {}, semantic), attempt)


# --------------------------------------------------------------------------- cufile_config
def test_fuzz_cufile_config_options(record_property, host_libcufile_1_15):
    """Options of the module (cufile.json content is the cufile_config suite's fuzz). Plan, then
    apply as the action plugin does: a bad mode/owner/group must not leave a written file."""
    base = {"settings": {"properties": {"io_batchsize": 64}}, "backup": True}
    semantic = [
        st.sampled_from(["abc", "0999", "u+q", "rwxr-xr-x", "99999", "u=rw,g=zz", "0o644x"])
        .map(lambda v: (put(base, ("mode",), v), "mode")),
        LETTERS.map(lambda v: (put(base, ("owner",), "nosuchuser-" + v), "owner")),
        LETTERS.map(lambda v: (put(base, ("group",), "nosuchgroup-" + v), "group")),
        st.just((put(put(base, ("src",), "/nonexistent/cufile.json"), ("base",), "shipped"), "base")),  # exclusive
        st.just((put(base, ("src",), "/nonexistent/cufile.json"), "src")),      # a controller file, no action plugin
        st.just((put(put(base, ("src",), "/nonexistent/cufile.json"), ("remote_src",), True), "src"))]
    spec = dict((k, v) for k, v in _cufile_backend.argument_spec().items() if k not in ("path",))
    state = {}

    def attempt(args, _needle):
        tmp = tempfile.mkdtemp(prefix="gds-fuzz-")
        try:
            target = os.path.join(tmp, "cufile.json")
            with open(target, "w") as f:
                f.write('{"logging": {"level": "ERROR"}}\n')
            os.chmod(target, 0o644)
            before = sorted((n, open(os.path.join(tmp, n), "rb").read(), os.stat(os.path.join(tmp, n)).st_mode)
                            for n in os.listdir(tmp))
            args = dict(args, path=target)
            result = run_module(cufile_config.main, dict(args, _cufile={"phase": "plan"}))
            if not result.get("failed") and result.get("changed"):
                state["applied"] = state.get("applied", 0) + 1
                internal = {"phase": "apply", "expect": result["fingerprint"], "content": result.get("desired_text")}
                result = run_module(cufile_config.main, dict(args, _cufile=internal))
            after = sorted((n, open(os.path.join(tmp, n), "rb").read(), os.stat(os.path.join(tmp, n)).st_mode)
                           for n in os.listdir(tmp))
            return result, [] if after == before else ["%s changed" % tmp]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    fuzz(record_property, cases(spec, base, semantic), attempt)


# --------------------------------------------------------------------------- gpu_operator
def test_fuzz_gpu_operator_options(record_property, tmp_path):
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules import test_gpu_operator as gop
    base = {"gds": {"version": "2.30.1"}, "wait_timeout": 2}
    semantic = [
        st.one_of(LETTERS, st.sampled_from(["-5", "0", "10x", "", "1h-", "-1m", "0s"]), st.integers(max_value=0))
        .map(lambda v: (put(base, ("wait_timeout",), v), "wait_timeout")),
        st.just((put(base, ("values_files",), [str(tmp_path / "missing.yaml")]), "values_files")),
        st.just((put(base, ("values",), {"gds": {"version": "1.0.0"}}), "gds.version")),
        st.just((put(put(base, ("kubeconfig",), "/root/.kube/config"), ("kubeconfig_content",), "x"), "kubeconfig")),
        st.just((put(base, ("chart_ref",), None), "chart_ref"))]
    mutating = ("upgrade", "rollback", "uninstall", "install")

    def attempt(args, needle):
        helm = gop.FakeHelm(*gop.deployed({"gds": {"enabled": True, "version": "2.29.4"}}))
        result = gop.run(helm, dict(args, chart_ref=None) if needle == "chart_ref" else args)
        return result, [c for c in helm.calls if c[1] in mutating]
    fuzz(record_property, cases(gpu_operator.argument_spec(), base, semantic), attempt)


# --------------------------------------------------------------------------- gds_node_probe
class _RecordingApi(object):
    """A Kubernetes API that records every call: no write may happen for a bad input."""

    def __init__(self):
        self.writes = []

    def nodes(self, selector):
        return [{"metadata": {"name": "gpu-a", "labels": {}}, "spec": {},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]

    def __getattr__(self, name):
        def write(*args, **kwargs):
            self.writes.append(name)
            raise AssertionError("a bad input reached the API: %s" % name)
        return write


def _api_attempt(main, backend, api_class):
    """Run the module with ``backend.<api_class>`` recording the API calls: a bad input makes none."""
    def attempt(args, _needle):
        api = _RecordingApi()
        with mock.patch.object(backend, api_class, return_value=api), \
                mock.patch("ansible_collections.gpudirect.storage.plugins.module_utils._k8s.wait.api_client"):
            result = run_module(main, args)
        return result, api.writes
    return attempt


def test_fuzz_gds_node_probe_options(record_property):
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as run_mod
    base = {"probe_path": ["/data"]}
    semantic = [
        st.one_of(st.integers(max_value=0), st.integers(min_value=1001))
        .map(lambda v: (put(base, ("parallel",), v), "parallel")),
        st.integers(min_value=30, max_value=60).map(lambda v: (put(base, ("pod_timeout",), v), "pod_timeout")),
        st.just((put(base, ("probe_path",), ["relative/dir"]), "probe_path")),
        st.just((put(base, ("image",), ""), "image")),
        st.integers(max_value=0).map(lambda v: (put(base, ("probe_size_mb",), v), "probe_size_mb"))]

    fuzz(record_property, cases(gds_node_probe.argument_spec(), base, semantic), _api_attempt(gds_node_probe.main, run_mod, "KubeApi"))


# --------------------------------------------------------------------------- gds_local_volumes
def test_fuzz_gds_local_volumes_options(record_property):
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_local_volumes as run_mod
    from ansible_collections.gpudirect.storage.plugins.modules import gds_local_volumes
    vol = {"node": "gpu-a", "path": "/mnt/nvme0", "capacity": "3576Gi"}
    base = {"volumes": [vol]}
    semantic = [
        LETTERS.map(lambda v: (put(base, ("storage_class",), v.upper() + "_x"), "storage_class")),
        BAD_PATH.map(lambda v: ({"volumes": [dict(vol, path=v)]}, "volumes[0].path")),
        st.sampled_from(["", "lots", "1 Gi", "-1Gi", "1GB", "1e3Gi"]).map(
            lambda v: ({"volumes": [dict(vol, capacity=v)]}, "volumes[0].capacity")),
        st.just(({"volumes": [vol, vol]}, "volumes[1]: node gpu-a path /mnt/nvme0 is listed twice")),
        st.just(({"volumes": [dict(vol, size="1Gi")]}, "volumes[0]: unknown key(s) size"))]

    fuzz(record_property, cases(gds_local_volumes.argument_spec(), base, semantic),
         _api_attempt(gds_local_volumes.main, run_mod, "VolumeApi"))


# --------------------------------------------------------------------------- gds_report
def test_fuzz_gds_report_options(record_property, tmp_path):
    """The module file only documents the action plugin; the action validates the options."""
    # controller-side code: absent where ansible-test runs module unit tests
    AnsibleActionFail = pytest.importorskip("ansible.errors").AnsibleActionFail
    from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_report_action import run_action
    dest = tmp_path / "reports"

    def attempt(args, _needle):
        try:
            result = run_action(dict(args, dest=str(dest)))
        except AnsibleActionFail as exc:
            result = {"failed": True, "msg": str(exc)}
        return result, os.listdir(str(dest)) if dest.exists() else []
    spec = dict((k, v) for k, v in gds_report.argument_spec().items() if k != "dest")
    fuzz(record_property, cases(spec, {}, []), attempt)


# --------------------------------------------------------------------------- gds_rollout_check
def test_fuzz_gds_rollout_check_options(record_property):
    """The module file only documents the action plugin, which reads the inventory and writes nothing."""
    AnsibleActionFail = pytest.importorskip("ansible.errors").AnsibleActionFail
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_rollout_check
    from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__rollout import run_action

    def attempt(args, _needle):
        try:
            return run_action({"gds_hosts": ["gpu-01"]}, args=args), []
        except AnsibleActionFail as exc:
            return {"failed": True, "msg": str(exc)}, []
    names = set(gds_rollout_check.argument_spec())  # one str option: an unknown option is the bad input
    unknown = st.from_regex(r"[a-z]{3,8}_zz", fullmatch=True).filter(lambda n: n not in names).map(lambda n: ({n: "1"}, n))
    fuzz(record_property, unknown, attempt)


def _fuzz_action(record_property, spec, run_action):
    """Options of an action plugin's module; a refused case must not have run the module."""
    AnsibleActionFail = pytest.importorskip("ansible.errors").AnsibleActionFail

    def attempt(args, _needle):
        try:
            result, execute = run_action(args)
        except AnsibleActionFail as exc:
            return {"failed": True, "msg": str(exc)}, []
        return result, ["the module ran"] if execute.called and result.get("failed") else []
    fuzz(record_property, cases(spec, {}, []), attempt)


def test_fuzz_gds_plan_options(record_property):
    """Action-level options are checked by the action, stage options by each stage on the host
    (tests/unit/plugins/modules/test_gds_plan.py)."""
    pytest.importorskip("ansible.errors")
    from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_plan import run_action
    _fuzz_action(record_property, gds_plan.argument_spec(), run_action)


def test_fuzz_gds_preflight_options(record_property):
    """The action validates the options before its one gds_facts call."""
    pytest.importorskip("ansible.errors")
    from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_preflight import run_action
    _fuzz_action(record_property, gds_preflight.argument_spec(), run_action)


@pytest.mark.xfail(strict=True, raises=TypeError, reason="ansible-core 2.19 calls set_fallbacks() on a dict option's "
                   "value before checking it is a dict (common/parameters.py _validate_sub_spec): a traceback")
@pytest.mark.parametrize("value", [0, [1]])
def test_core_suboption_type_error(value):
    """Through the roles, meta/argument_specs.yml (type: dict) catches this first, naming the variable."""
    result = run_module(nvidia_fs.main, dict(NVFS_BASE, repo=value))
    assert result["failed"] and "repo" in result["msg"]


def test_every_module_is_fuzzed():
    here = open(__file__).read()
    modules = sorted(f[:-3] for f in os.listdir(os.path.dirname(nvidia_fs.__file__)) if f.endswith(".py"))
    assert [m for m in modules if not re.search(r"def test_fuzz_%s_options" % m, here)] == []
