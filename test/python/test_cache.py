"""The on-disk kernel cache's location (FUSER_CACHE_DIR > XDG_CACHE_HOME > ~/.cache) and its
size limit (FUSER_CACHE_MAX_BYTES, least-recently-used eviction, safe under other processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fuser.runtime import cache

PAYLOAD = "x" * 1000


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No cache setting from the caller's environment; HOME is a scratch directory."""
    for var in ("FUSER_CACHE_DIR", "XDG_CACHE_HOME", "FUSER_CACHE", "FUSER_CACHE_MAX_BYTES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def test_the_process_cache_follows_the_environment(clean_env, tmp_path):
    """default_cache() is the cache the environment names now: pointing FUSER_CACHE_DIR elsewhere
    (or turning FUSER_CACHE off) opens another, whose memory layer holds nothing of the old one's.
    Tests isolate their compiles this way; CI failed once when a worker's first cache, opened
    before a test moved FUSER_CACHE_DIR, served that test a kernel from an earlier run."""
    clean_env.setenv("FUSER_CACHE_DIR", str(tmp_path / "a"))
    a = cache.default_cache()
    assert a.directory == tmp_path / "a" and cache.default_cache() is a  # same settings, same cache
    put(a, 1)
    clean_env.setenv("FUSER_CACHE_DIR", str(tmp_path / "b"))
    b = cache.default_cache()
    assert b.directory == tmp_path / "b" and b.get(key(1)) is None
    clean_env.setenv("FUSER_CACHE", "0")
    assert not cache.default_cache().disk
    clean_env.setenv("FUSER_CACHE", "1")
    clean_env.setenv("FUSER_CACHE_DIR", str(tmp_path / "a"))
    assert cache.default_cache().get(key(1)) is not None  # from a's disk layer
    mine = cache.KernelCache(tmp_path / "mine", disk=False)
    clean_env.setattr(cache, "_default", mine)  # installed by hand: kept whatever the environment says
    clean_env.setenv("FUSER_CACHE_DIR", str(tmp_path / "c"))
    assert cache.default_cache() is mine


def key(n: int) -> str:
    return f"{n:02x}" * 32


def put(c: cache.KernelCache, n: int) -> None:
    """Store entry n; every such entry takes the same number of bytes on disk."""
    c.put(key(n), {"ptx": PAYLOAD}, {"n": 1})


def entry_files(c: cache.KernelCache, k: str) -> list[Path]:
    return list((c.directory / "v1" / k[:2]).glob(f"{k}.*"))


def set_age(c: cache.KernelCache, k: str, t: float) -> None:
    """Make an entry look last used at time t (seconds since the epoch)."""
    for f in entry_files(c, k):
        os.utime(f, (t, t))


def disk_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


def entry_size(tmp_path: Path) -> int:
    """Bytes one entry of PAYLOAD takes on disk (all test entries have the same size)."""
    probe = cache.KernelCache(tmp_path / "probe", disk=True, max_bytes=0)
    put(probe, 0xEE)
    return disk_bytes(probe.directory)


# ------------------------------------------------------------------------ location

def test_location_precedence(clean_env, tmp_path):
    home_default = tmp_path / "home" / ".cache" / "fuser"
    assert cache.KernelCache().directory == home_default

    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.KernelCache().directory == tmp_path / "xdg" / "fuser"

    clean_env.setenv("FUSER_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache.KernelCache().directory == tmp_path / "explicit"

    clean_env.setenv("FUSER_CACHE_DIR", "")  # empty = unset
    assert cache.KernelCache().directory == tmp_path / "xdg" / "fuser"


@pytest.mark.parametrize("value", ["relative/cache", "", "."])
def test_relative_or_empty_xdg_is_ignored(clean_env, tmp_path, value):
    clean_env.setenv("XDG_CACHE_HOME", value)
    assert cache.KernelCache().directory == tmp_path / "home" / ".cache" / "fuser"


def test_entries_land_under_xdg(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache.KernelCache().put(key(1), {"ptx": "P"})
    assert (tmp_path / "xdg" / "fuser" / "v1" / key(1)[:2] / f"{key(1)}.json").is_file()
    assert cache.KernelCache().get(key(1)).payloads == {"ptx": "P"}
    assert not (tmp_path / "home").exists()


# ------------------------------------------------------------------- the limit setting

@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("12345", 12345), (" 100 ", 100), ("7b", 7), ("4K", 4096), ("512M", 512 << 20),
    ("2G", 2 << 30), ("2GiB", 2 << 30), ("3gb", 3 << 30), ("1T", 1 << 40), ("5 MiB", 5 << 20)])
def test_parse_max_bytes(text, expected):
    assert cache.parse_max_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "-1", "1.5G", "ten", "10X", "G", "10 GG", "0x10"])
def test_parse_max_bytes_rejects(text):
    with pytest.raises(ValueError, match="byte count"):
        cache.parse_max_bytes(text)


def test_env_limit(clean_env, tmp_path):
    assert cache.KernelCache(tmp_path).max_bytes == cache.DEFAULT_MAX_BYTES == 1 << 30
    clean_env.setenv("FUSER_CACHE_MAX_BYTES", "256M")
    assert cache.KernelCache(tmp_path).max_bytes == 256 << 20
    clean_env.setenv("FUSER_CACHE_MAX_BYTES", "0")
    assert cache.KernelCache(tmp_path).max_bytes == 0
    clean_env.setenv("FUSER_CACHE_MAX_BYTES", "  ")  # blank = unset
    assert cache.KernelCache(tmp_path).max_bytes == cache.DEFAULT_MAX_BYTES
    # an explicit argument wins over the environment
    assert cache.KernelCache(tmp_path, max_bytes=5).max_bytes == 5


@pytest.mark.parametrize("value", ["-1", "lots", "1.5G"])
def test_malformed_env_limit_warns_and_uses_default(clean_env, tmp_path, value):
    clean_env.setenv("FUSER_CACHE_MAX_BYTES", value)
    with pytest.warns(RuntimeWarning, match=r"FUSER_CACHE_MAX_BYTES.*byte count.*" + repr(value)):
        c = cache.KernelCache(tmp_path)
    assert c.max_bytes == cache.DEFAULT_MAX_BYTES
    c.put(key(1), {"ptx": "P"})  # and the cache still works
    assert cache.KernelCache(tmp_path, max_bytes=0).get(key(1)) is not None


def test_negative_max_bytes_argument_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="max_bytes"):
        cache.KernelCache(tmp_path, max_bytes=-1)


# ------------------------------------------------------------------------ eviction

def test_lru_eviction_order_and_hits_refresh(tmp_path):
    size = entry_size(tmp_path)
    d = tmp_path / "c"
    c = cache.KernelCache(d, disk=True, max_bytes=3 * size + size // 2)  # room for 3 entries
    for n in (1, 2, 3):
        put(c, n)
    for n, t in ((1, 1000), (2, 2000), (3, 3000)):
        set_age(c, key(n), t)
    assert c.stats["evicted"] == 0

    # a disk hit (fresh process) makes 1 the most recent, so 2 is the oldest now
    assert cache.KernelCache(d, disk=True).get(key(1)) is not None
    put(c, 4)
    assert set(c.keys_on_disk()) == {key(1), key(3), key(4)}
    assert c.stats["evicted"] == 1 and disk_bytes(d) <= c.max_bytes

    # a memory hit refreshes the disk recency too (other processes evict by it)
    for n, t in ((1, 1000), (3, 2000), (4, 3000)):
        set_age(c, key(n), t)
    assert c.get(key(1)) is not None and c.stats["memory_hits"] == 1
    put(c, 5)
    assert set(c.keys_on_disk()) == {key(1), key(4), key(5)}
    # evicted entries are whole: no payload is left without its .json
    assert not entry_files(c, key(2)) and not entry_files(c, key(3))


def test_eviction_frees_as_many_entries_as_needed(tmp_path):
    size = entry_size(tmp_path)
    c = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=0)
    for n in range(1, 6):
        put(c, n)
        set_age(c, key(n), 1000 * n)
    c.max_bytes = 2 * size + size // 2
    put(c, 6)
    assert set(c.keys_on_disk()) == {key(5), key(6)}
    assert c.stats["evicted"] == 4


def test_scans_only_when_the_estimate_is_over_the_limit(tmp_path, monkeypatch):
    """No directory scan per put: one on the first write, then one when the last scan's
    total plus our own writes passes the limit, and that scan sees other processes' entries."""
    size = entry_size(tmp_path)
    d = tmp_path / "c"
    c = cache.KernelCache(d, disk=True, max_bytes=4 * size + size // 2)  # room for 4 entries
    scans = []
    real_evict = c._evict

    def counting_evict(keep):
        scans.append(keep)
        return real_evict(keep)

    monkeypatch.setattr(c, "_evict", counting_evict)
    for n in (1, 2, 3):
        put(c, n)
    assert len(scans) == 1
    other = cache.KernelCache(d, disk=True, max_bytes=0)  # a process with no limit
    for n in (4, 5, 6):
        put(other, n)
    for n in range(1, 7):
        set_age(c, key(n), 1000 * n)
    assert len(scans) == 1
    put(c, 7)  # our estimate: 4 entries, under the limit; the disk has 7
    assert len(scans) == 1 and len(list(c.keys_on_disk())) == 7
    put(c, 8)  # 5 by our count: scan, and evict the oldest, ours or not
    assert len(scans) == 2
    assert set(c.keys_on_disk()) == {key(5), key(6), key(7), key(8)}


def test_just_written_entry_survives_alone_over_the_limit(tmp_path):
    c = cache.KernelCache(tmp_path, disk=True, max_bytes=10)  # smaller than any entry
    put(c, 1)
    assert list(c.keys_on_disk()) == [key(1)]
    put(c, 2)
    assert list(c.keys_on_disk()) == [key(2)]
    assert cache.KernelCache(tmp_path, disk=True).get(key(2)).payloads["ptx"] == PAYLOAD


def test_rewriting_an_entry_makes_it_recent(tmp_path):
    size = entry_size(tmp_path)
    c = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=2 * size + size // 2)
    put(c, 1)
    put(c, 2)
    set_age(c, key(1), 1000)
    set_age(c, key(2), 2000)
    put(c, 1)  # e.g. a corrupt entry rewritten: now the newest
    put(c, 3)
    assert set(c.keys_on_disk()) == {key(1), key(3)}


def test_zero_limit_means_unlimited(clean_env, tmp_path):
    clean_env.setenv("FUSER_CACHE_MAX_BYTES", "0")
    c = cache.KernelCache(tmp_path, disk=True)
    for n in range(1, 21):
        put(c, n)
    assert len(list(c.keys_on_disk())) == 20 and c.stats["evicted"] == 0


def test_temporary_files_are_kept_unless_stale(tmp_path):
    c = cache.KernelCache(tmp_path, disk=True, max_bytes=10)
    put(c, 1)
    shard = c.directory / "v1" / key(1)[:2]
    fresh, stale = shard / f".{key(2)}.json.a.tmp", shard / f".{key(3)}.json.b.tmp"
    fresh.write_text("in progress")
    stale.write_text("left by a killed writer")
    os.utime(stale, (1000, 1000))
    put(c, 4)
    assert fresh.exists() and not stale.exists()


def test_payloads_of_a_write_in_progress_are_not_evicted(tmp_path):
    """Another process has written entry 2's payloads, not yet its .json (written last). Even as
    the least recent entry it is left alone: deleting the payloads would leave that writer's
    .json naming files that no longer exist. Payloads whose .json never came are stale later."""
    size = entry_size(tmp_path)
    c = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=0)
    for n in (1, 2, 3):
        put(c, n)
        set_age(c, key(n), time.time() - 100 + n)
    writing = [f for f in entry_files(c, key(2)) if not f.name.endswith(".json")]
    (c.directory / "v1" / key(2)[:2] / f"{key(2)}.json").unlink()
    set_age(c, key(2), time.time() - 1000)  # the oldest
    c.max_bytes = size
    put(c, 4)
    assert all(f.exists() for f in writing)
    assert set(c.keys_on_disk()) == {key(4)}
    set_age(c, key(2), 1000)  # a writer killed long ago
    put(c, 5)
    assert not any(f.exists() for f in writing)


def test_eviction_skips_files_deleted_by_another_process(tmp_path, monkeypatch):
    """Between the listing and the stat, and between the stat and the unlink, another process
    may remove any file or whole shard: the put neither fails nor loses the new entry."""
    c = cache.KernelCache(tmp_path, disk=True, max_bytes=0)
    for n in range(1, 9):
        put(c, n)
        set_age(c, key(n), 1000 * n)
    c.max_bytes = 10
    new = 0x42
    real_scandir, real_unlink = os.scandir, Path.unlink

    def racing_scandir(path):
        entries = list(real_scandir(path))
        for e in entries:  # "the other process" deletes what was just listed, but our new entry
            if e.is_dir() and e.name == key(1)[:2]:
                for f in real_scandir(e.path):
                    os.unlink(f.path)
                os.rmdir(e.path)
            elif e.is_file() and e.name.startswith(key(2)):
                os.unlink(e.path)
        return iter(entries)

    def racing_unlink(self, *args, **kwargs):
        os.unlink(self)  # gone just before we get to it
        return real_unlink(self, *args, **kwargs)

    monkeypatch.setattr(cache.os, "scandir", racing_scandir)
    monkeypatch.setattr(cache.Path, "unlink", racing_unlink)
    put(c, new)
    monkeypatch.undo()
    assert list(c.keys_on_disk()) == [key(new)]
    assert cache.KernelCache(tmp_path, disk=True).get(key(new)).payloads["ptx"] == PAYLOAD


def test_eviction_when_the_directory_is_removed(tmp_path, monkeypatch):
    c = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=10)
    put(c, 1)
    real_write = c._write_disk

    def write_then_vanish(e):  # another process wipes the cache right after our write
        ok = real_write(e)
        shutil.rmtree(tmp_path / "c")
        return ok

    monkeypatch.setattr(c, "_write_disk", write_then_vanish)
    put(c, 2)  # no exception
    assert c.get(key(2)) is not None  # the memory layer still has it


def test_concurrent_processes_share_a_bounded_cache(tmp_path):
    size = entry_size(tmp_path)
    limit = 10 * size
    script = textwrap.dedent(f"""
        import sys
        from fuser.runtime import cache
        c = cache.KernelCache({str(tmp_path / 'c')!r}, disk=True, max_bytes={limit})
        w = int(sys.argv[1])
        for i in range(40):
            k = f"{{w:02x}}{{i:02x}}" * 16
            c.put(k, {{"ptx": {PAYLOAD!r}}}, {{"n": 1}})
            c.get(f"{{(w + 1) % 4:02x}}{{i:02x}}" * 16)  # hits and misses on the others' entries
            c.clear_memory()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)], stderr=subprocess.PIPE,
                              text=True) for w in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err and "Warning" not in err, err
    # A process scans only when its own count says over the limit, so the others' writes since
    # its last scan can leave the directory over the limit (the module docstring says so); the
    # scans did evict, and a process's first write scans and brings the directory within it.
    assert disk_bytes(tmp_path / "c") < 4 * 40 * size
    reader = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=0)
    for k in reader.keys_on_disk():
        assert reader.get(k).payloads["ptx"] == PAYLOAD
    assert reader.stats["corrupt"] == 0
    late = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=limit)
    late.put("ff" * 32, {"ptx": PAYLOAD}, {"n": 1})
    assert disk_bytes(tmp_path / "c") <= limit


# ------------------------------------------------------------------- metadata digest

def test_edited_metadata_is_a_miss_and_is_rebuilt(tmp_path):
    """The .json's metadata is covered by a digest, as the payloads are: an edit that stays
    valid JSON (a launch grid 512 -> 912) is a miss, never served, and the next put rewrites it."""
    meta = {"launches": [{"kernel": "k0", "grid": [512, 1, 1]}]}
    cache.KernelCache(tmp_path, disk=True).put(key(1), {"ptx": PAYLOAD}, meta)
    path = tmp_path / "v1" / key(1)[:2] / f"{key(1)}.json"
    text = path.read_text()
    assert text.count('"grid": [512,') == 1
    path.write_text(text.replace('"grid": [512,', '"grid": [912,'))
    c = cache.KernelCache(tmp_path, disk=True)
    assert c.get(key(1)) is None and c.stats["corrupt"] == 1
    e = c.get_or_create(key(1), lambda: ({"ptx": PAYLOAD}, meta))
    assert e.meta == meta
    assert cache.KernelCache(tmp_path, disk=True).get(key(1)).meta == meta


def test_entry_without_a_digest_is_a_miss(tmp_path):
    """An entry written before the digest existed is not trusted: a miss, rewritten."""
    cache.KernelCache(tmp_path, disk=True).put(key(1), {"ptx": PAYLOAD}, {"n": 1})
    path = tmp_path / "v1" / key(1)[:2] / f"{key(1)}.json"
    d = json.loads(path.read_text())
    del d["digest"]
    path.write_text(json.dumps(d, sort_keys=True))
    assert cache.KernelCache(tmp_path, disk=True).get(key(1)) is None


def test_compile_with_an_edited_grid_recompiles(tmp_path, monkeypatch):
    """End to end: the driver's cached Program with its grid edited on disk is recompiled,
    and the launch keeps the grid the compiler chose."""
    from fuser.driver import compile_fusion

    text = """func.func @f(%x: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %e = fusion.exp %x : tensor<512x1024xf32>
  func.return %e : tensor<512x1024xf32>
}"""
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSER_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", "0")
    first = compile_fusion(text)
    assert [s.grid for s in first.program.launches] == [(512, 1, 1)]
    (path,) = (tmp_path / "v1").glob("*/*.json")
    body = path.read_text()
    assert body.count('\\"grid\\": [512,') == 1  # the Program is a JSON string in the metadata
    path.write_text(body.replace('\\"grid\\": [512,', '\\"grid\\": [912,'))
    cache.default_cache().clear_memory()
    again = compile_fusion(text)
    assert not again.cached and [s.grid for s in again.program.launches] == [(512, 1, 1)]
    cache.default_cache().clear_memory()
    assert compile_fusion(text).cached  # rewritten by the recompile


# ------------------------------------------------------------------- building once

def test_a_held_build_lock_makes_others_wait_or_step_aside(tmp_path):
    """`building` holds an flock per entry: a second holder is refused with Busy (wait=False),
    the lock file goes with the build, and get_or_create builds under it."""
    c = cache.KernelCache(tmp_path, disk=True)
    other = cache.KernelCache(tmp_path, disk=True)  # its own descriptors, as another process's
    lock = tmp_path / "v1" / key(1)[:2] / f".{key(1)}.lock"
    with c.building(key(1)):
        assert lock.exists()
        with pytest.raises(cache.Busy):
            with other.building(key(1), wait=False):
                pass
        with other.building(key(2), wait=False):  # another entry is free
            pass
    assert not lock.exists()
    with other.building(key(1), wait=False):
        pass
    built = []
    e = c.get_or_create(key(3), lambda: (built.append(1) or {"ptx": PAYLOAD}, {"n": 1}))
    assert e.payloads["ptx"] == PAYLOAD and built == [1]
    assert list(c.keys_on_disk()) == [key(3)]  # no lock file is taken for an entry


def test_a_hung_holder_is_waited_for_only_so_long(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_LOCK_WAIT_S", "0.3")
    c = cache.KernelCache(tmp_path, disk=True)
    other = cache.KernelCache(tmp_path, disk=True)
    with c.building(key(1)):
        start = time.monotonic()
        with pytest.warns(RuntimeWarning, match="waited 0.3 s for another process"):
            with other.building(key(1)):
                pass
        assert 0.3 <= time.monotonic() - start < 5
    assert other.stats["lock_waits"] == 1


def test_processes_compile_each_fusion_once(tmp_path):
    """N processes that compile the same fusions at the same moment into one cache directory
    (the ranks of a distributed job) compile each fusion once; the others wait and load it."""
    fusions = [f"""func.func @f{i}(%x: tensor<256x{512 * (i + 1)}xf32>) -> tensor<256x{512 * (i + 1)}xf32> {{
  %e = fusion.exp %x : tensor<256x{512 * (i + 1)}xf32>
  %t = fusion.tanh %e : tensor<256x{512 * (i + 1)}xf32>
  func.return %t : tensor<256x{512 * (i + 1)}xf32>
}}""" for i in range(3)]
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import json, os, time
        import fuser.api as fa
        while not os.path.exists({str(go)!r}):  # start together, imports done
            time.sleep(0.01)
        print(json.dumps([fa.compile(t, stages=False).result.cached for t in {fusions!r}]))
    """)
    env = dict(os.environ, FUSER_CACHE_DIR=str(tmp_path / "c"), FUSER_CACHE="1")
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    time.sleep(0.5)
    go.touch()
    cached = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        cached.append(json.loads(out.strip().splitlines()[-1]))
    for i in range(len(fusions)):
        assert [c[i] for c in cached].count(False) == 1, f"fusion {i}: cached flags {[c[i] for c in cached]}"
    assert not list((tmp_path / "c").rglob("*.lock"))


def test_a_full_cache_does_not_scan_on_every_put(tmp_path, monkeypatch):
    """An eviction frees down to 90% of the limit, so the puts after it fit without a scan (a
    full cache scanned its whole directory on every put: a half second per compile at 20k files)."""
    size = entry_size(tmp_path)
    c = cache.KernelCache(tmp_path / "c", disk=True, max_bytes=40 * size + size // 2)  # room for 40
    scans = []
    real_evict = c._evict
    monkeypatch.setattr(c, "_evict", lambda keep: scans.append(keep) or real_evict(keep))
    for n in range(200):
        put(c, n)
    # the first write, then one scan per 4-5 puts once full (it frees 4 entries' room)
    assert len(scans) <= 1 + (200 - 40) // 4
    assert len(scans) >= (200 - 40) // 5
    assert disk_bytes(tmp_path / "c") <= c.max_bytes
