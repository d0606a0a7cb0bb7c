"""A real module run through AnsiballZ keeps its payload's compiled code on the host
(plugins/module_utils/_common/bytecode_cache.py): the zip importer details it relies on are those
of the ansible-core that builds the payload, so this runs a module the way Ansible does, with
this checkout's ansible-core (test_core221.py does the same with ansible-core 2.21)."""

import json
import os
import stat

from conftest import ROOT, VENV_BIN, run


def module_run(ansible_bin, cache, home):
    """gds_facts (probe off: it only reads) on localhost; GPUDIRECT_BYTECODE_CACHE and HOME in the
    module's environment (a local connection passes the controller's environment on)."""
    env = {"ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "build/collections"), "PYTHONDONTWRITEBYTECODE": "",
           "GPUDIRECT_BYTECODE_CACHE": cache, "HOME": home, "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    res = run([os.path.join(ansible_bin, "ansible"), "localhost", "-c", "local", "-e",
               "ansible_python_interpreter=/usr/bin/python3", "-m", "gpudirect.storage.gds_facts", "-a",
               "probe=false gather_cuda=false"], env=env)
    result = json.loads(res.stdout.split("=>", 1)[1])  # localhost | SUCCESS => {...} (JSON: see env)
    assert not result.get("failed"), result
    return result


def assert_cached_between_runs(ansible_bin, tmp_path):
    home = str(tmp_path / "home")
    os.mkdir(home)
    cache = os.path.join(home, ".ansible", "pycache", "gpudirect.storage")  # the default
    first = module_run(ansible_bin, "", home)
    entries = sorted(os.listdir(cache))
    assert len(entries) > 10, entries  # the collection's module_utils and Ansible's, beyond basic
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(os.path.join(cache, e)).st_mode) == 0o600 for e in entries)
    second = module_run(ansible_bin, "", home)  # read from the cache: nothing new, the same facts
    assert sorted(os.listdir(cache)) == entries
    assert second["ansible_facts"]["gds"]["mode"] == first["ansible_facts"]["gds"]["mode"]
    other = str(tmp_path / "elsewhere")
    module_run(ansible_bin, other, home)  # an absolute path: that directory
    assert sorted(os.listdir(other)) == entries
    for value in ("off", "relative-dir"):  # a relative path would land wherever the module runs: off
        fresh = str(tmp_path / ("home-" + value))
        os.mkdir(fresh)
        module_run(ansible_bin, value, fresh)
        assert not os.path.exists(os.path.join(fresh, ".ansible", "pycache"))
        assert not os.path.exists(os.path.join(ROOT, value)) and not os.path.exists(os.path.join(fresh, value))


def test_a_module_run_keeps_its_compiled_code_and_reads_it_back(tmp_path):
    assert_cached_between_runs(VENV_BIN, tmp_path)
