"""Compiled-kernel cache: an in-memory dict in front of an on-disk directory.

Keys are sha256 digests over (IR text, input signature, target arch, pipeline and
options string, fuser version and a digest of the compiler's source), so any change to one
of them is a miss. An entry
is a few named text payloads (PTX, ...) plus a small JSON of metadata.

On disk (``$FUSER_CACHE_DIR``; else ``$XDG_CACHE_HOME/fuser`` when that is an absolute
path; else ``~/.cache/fuser``; ``FUSER_CACHE=0`` turns the disk layer off) each entry is
``v1/<k[:2]>/<k>.<payload>.txt`` files and a ``v1/<k[:2]>/<k>.json`` written last that
records each payload's sha256, and a sha256 of its own other fields (the metadata included:
an edit that leaves valid JSON, a launch grid changed, is a mismatch too).
Every file is written to a temporary name and ``os.replace``d into place, so a
reader never sees half a file; a corrupt or inconsistent entry is treated as a
miss (and rewritten by the next ``put``), never an exception.

The disk layer is bounded: when its files total more than ``FUSER_CACHE_MAX_BYTES``
(default 1 GiB; ``0`` = no limit; a suffix K/M/G/T means KiB/MiB/GiB/TiB), a ``put``
deletes the least recently used entries until they take at most 90% of it (so that the puts
after it do not each scan again). To spare a directory scan per
``put``, a process scans on its first write and then whenever the last scan's total plus
its own writes since exceeds the limit; with several processes sharing the directory, what
the others wrote since a process's last scan can leave it over the limit until the next scan
(any process's). An entry's
recency is the newest mtime of its files: set by the write, and by every hit, which touches
the ``.json`` (explicitly: atime updates are often disabled). The entry just written is
never evicted, even when it alone is over the limit.
Several processes may share the directory: files that vanish under the scan are skipped.

Building an entry takes the entry's lock (``building``: an ``flock`` on
``v1/<k[:2]>/.<k>.lock``), so processes that share the directory (the ranks of a distributed
job, the backend's compile workers) build each entry once: the first to ask builds it, the
others wait and then read it. A process that waits longer than ``FUSER_CACHE_LOCK_WAIT_S``
(default 600 s: a holder that hangs) builds the entry itself; a holder that dies releases its
lock with its descriptors. Where ``flock`` does not exist (not POSIX) there is no lock and two
processes may build the same entry, which is only wasted time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

try:
    import fcntl
except ImportError:  # not POSIX: no cross-process build lock (see the module docstring)
    fcntl = None  # type: ignore[assignment]

__all__ = ["CacheEntry", "KernelCache", "Busy", "make_key", "signature_string", "default_cache",
           "put_program", "get_program", "compiler_fingerprint", "DEFAULT_MAX_BYTES",
           "default_directory", "parse_max_bytes"]

_LAYOUT = "v1"
_NAME_RE = re.compile(r"^[a-z0-9_]+$")
DEFAULT_MAX_BYTES = 1 << 30
_SIZE_RE = re.compile(r"^([0-9]+)\s*(?:([kmgt])(?:i?b)?|b)?$", re.I)
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_STALE_TMP_S = 24 * 3600  # a temporary file this old was left by a killed writer
DEFAULT_LOCK_WAIT_S = 600.0
_LOCK_POLL_S = 0.05


class Busy(Exception):
    """`KernelCache.building(key, wait=False)`: another process is building this entry now."""


def default_directory() -> Path:
    """``$FUSER_CACHE_DIR``, else ``$XDG_CACHE_HOME/fuser``, else ``~/.cache/fuser``."""
    explicit = os.environ.get("FUSER_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore a relative path
        return Path(xdg) / "fuser"
    return Path.home() / ".cache" / "fuser"


def parse_max_bytes(text: str) -> int:
    """A byte count: '1073741824', '512M', '2GiB' (binary units); 0 means no limit.

    Raises ValueError, naming the accepted forms, for anything else (negative included)."""
    m = _SIZE_RE.match(text.strip())
    if not m:
        raise ValueError(f"expected a byte count such as 1073741824, 512M or 2G (0 = no limit), "
                         f"got {text!r}")
    return int(m.group(1)) * _UNITS.get((m.group(2) or "").lower(), 1)


def _lock_wait_from_env() -> float:
    text = os.environ.get("FUSER_CACHE_LOCK_WAIT_S", "").strip()
    if not text:
        return DEFAULT_LOCK_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        warnings.warn(f"fuser: FUSER_CACHE_LOCK_WAIT_S={text!r} is not a number of seconds >= 0; "
                      f"using {DEFAULT_LOCK_WAIT_S:g}", RuntimeWarning, stacklevel=3)
        return DEFAULT_LOCK_WAIT_S
    return value


def _max_bytes_from_env() -> int:
    raw = os.environ.get("FUSER_CACHE_MAX_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return parse_max_bytes(raw)
    except ValueError as err:
        # a typo in a cache setting should not stop compiles: say so and keep the default
        warnings.warn(f"fuser: ignoring FUSER_CACHE_MAX_BYTES: {err}; using the default "
                      f"limit of {DEFAULT_MAX_BYTES} bytes", RuntimeWarning, stacklevel=3)
        return DEFAULT_MAX_BYTES


def _fuser_version() -> str:
    try:
        return importlib.metadata.version("fuser")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


_COMPILER_DIRS = ("dialects", "passes", "lowering")  # with their subpackages
_COMPILER_FILES = ("driver.py",)
_fingerprint: str | None = None


def compiler_fingerprint() -> str:
    """fuser's version plus a digest of the compiler's own source (dialects, passes, lowering).

    Part of every compile key, so a kernel cached by one build of the schedulers is never
    served to another, even at the same version number (a checkout being edited, an upgrade
    that forgot to bump the version)."""
    global _fingerprint
    if _fingerprint is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        files = [root / f for f in _COMPILER_FILES]
        files += [f for sub in _COMPILER_DIRS for f in sorted((root / sub).rglob("*.py"))]
        for f in files:
            h.update(f"{f.relative_to(root).as_posix()}\0".encode())
            h.update(f.read_bytes())
        _fingerprint = f"{_fuser_version()}+{h.hexdigest()[:16]}"
    return _fingerprint


def signature_string(signature: Any) -> str:
    """Canonical text of an input signature: '4x5xf32,8xi32' (shape, dtype per input).

    Accepts a string (used as is) or an iterable of BufferSpec / (shape, dtype)."""
    if isinstance(signature, str):
        return signature
    parts = []
    for s in signature:
        shape, dtype = (s.shape, s.dtype) if hasattr(s, "shape") else s
        parts.append("".join(f"{int(d)}x" for d in shape) + str(dtype))
    return ",".join(parts)


def make_key(ir_text: str, signature: Any, arch: str, options: str = "",
             version: str | None = None) -> str:
    """sha256 over length-prefixed components, so no two tuples share a key."""
    h = hashlib.sha256()
    for part in ("fuser-kernel-cache", ir_text, signature_string(signature), arch, options,
                 _fuser_version() if version is None else version):
        b = part.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    key: str
    payloads: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _record_digest(record: dict) -> str:
    """sha256 of an entry's .json fields (all but the digest itself), in a canonical form:
    the payloads carry their own digests, and this one covers the metadata."""
    return _sha(json.dumps(record, sort_keys=True))


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:  # already gone (another process evicted it) or not ours to delete
        pass


class KernelCache:
    """Memory + disk cache of compiled kernels. Thread-safe; never raises on bad disk state."""

    def __init__(self, directory: str | os.PathLike | None = None, disk: bool | None = None,
                 max_memory_entries: int = 1024, max_bytes: int | None = None):
        """``max_bytes``: limit of the disk layer (0 = none); None reads FUSER_CACHE_MAX_BYTES."""
        if directory is None:
            directory = default_directory()
        if disk is None:
            disk = os.environ.get("FUSER_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")
        if max_bytes is None:
            max_bytes = _max_bytes_from_env()
        elif max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0 (0 = no limit), got {max_bytes}")
        self.directory = Path(directory)
        self.disk = bool(disk)
        self.max_memory_entries = max_memory_entries
        self.max_bytes = int(max_bytes)
        self._mem: OrderedDict[str, CacheEntry] = OrderedDict()
        self._lock = threading.Lock()
        self._evict_lock = threading.Lock()  # one eviction scan at a time per process
        self._disk_bytes: int | None = None   # last scan's total + what we wrote since
        self._warned = False
        self.opened_for: tuple | None = None  # the environment default_cache() opened it for
        # lock_waits: builds that found another process building the same entry and waited for it
        self.stats = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "corrupt": 0, "write_errors": 0,
                      "evicted": 0, "lock_waits": 0}

    # -- paths
    def _meta_path(self, key: str) -> Path:
        return self.directory / _LAYOUT / key[:2] / f"{key}.json"

    def _payload_path(self, key: str, name: str) -> Path:
        return self.directory / _LAYOUT / key[:2] / f"{key}.{name}.txt"

    # -- public API
    def get(self, key: str) -> CacheEntry | None:
        with self._lock:
            e = self._mem.get(key)
            if e is not None:
                self._mem.move_to_end(key)
                self.stats["memory_hits"] += 1
        if e is not None:
            self._touch(key)  # other processes evict by the disk recency
            return e
        e = self._read_disk(key) if self.disk else None
        with self._lock:
            if e is None:
                self.stats["misses"] += 1
                return None
            self.stats["disk_hits"] += 1
            self._remember(e)
        self._touch(key)
        return e

    def put(self, key: str, payloads: dict[str, str], meta: dict[str, Any] | None = None) -> CacheEntry:
        for name in payloads:
            if not _NAME_RE.match(name):
                raise ValueError(f"cache payload name {name!r} must match {_NAME_RE.pattern}")
        e = CacheEntry(key, dict(payloads), dict(meta or {}))
        json.dumps(e.meta)  # fail early (TypeError) on metadata that is not JSON
        with self._lock:
            self._remember(e)
        if self.disk:
            written = self._write_disk(e)
            if written is not None and self.max_bytes:
                self._enforce_limit(key, written)
        return e

    def get_or_create(self, key: str,
                      build: Callable[[], tuple[dict[str, str], dict[str, Any]]]) -> CacheEntry:
        """The entry for ``key``, calling ``build() -> (payloads, meta)`` on a miss."""
        e = self.get(key)
        if e is None:
            with self.building(key):
                e = self.recheck(key)
                if e is None:
                    payloads, meta = build()
                    e = self.put(key, payloads, meta)
        return e

    def recheck(self, key: str) -> CacheEntry | None:
        """`get` again inside `building` after a miss: the entry another process (or thread) may
        have put since, counted as a hit; a second miss is not counted again."""
        with self._lock:
            e = self._mem.get(key)
        if e is None and self.disk:
            e = self._read_disk(key)
            if e is not None:
                with self._lock:
                    self.stats["misses"] -= 1
                    self.stats["disk_hits"] += 1
                    self._remember(e)
        return e

    @contextmanager
    def building(self, key: str, wait: bool = True) -> Iterator[None]:
        """Hold ``key``'s build lock for the body, which should ``get`` the key again (another
        process may have built it while this one waited) and build and ``put`` it if still missing.

        wait=False raises ``Busy`` at once when another process holds the lock (a compile worker
        then takes another entry first). Without a disk layer, an unwritable directory or
        ``flock``, the body runs unlocked."""
        fd = self._acquire_build_lock(key, wait) if self.disk and fcntl is not None else None
        try:
            yield
        finally:
            if fd is not None:
                # unlink before unlocking: a process that opened the old file sees it replaced
                # (the inode check in _lock) and opens the new one
                _unlink(self._lock_path(key))
                os.close(fd)

    def _lock_path(self, key: str) -> Path:
        return self.directory / _LAYOUT / key[:2] / f".{key}.lock"

    def _acquire_build_lock(self, key: str, wait: bool) -> int | None:
        """An open descriptor holding ``key``'s lock file's flock, or None where there is no lock
        to hold (a directory we cannot write, or a wait past FUSER_CACHE_LOCK_WAIT_S)."""
        path = self._lock_path(key)
        deadline = None
        waited = False
        while True:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                return None  # _write_disk will warn that the directory is not writable
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if not wait:
                    raise Busy(key) from None
                if not waited:
                    waited = True
                    with self._lock:
                        self.stats["lock_waits"] += 1
                    deadline = time.monotonic() + _lock_wait_from_env()
                if time.monotonic() > deadline:
                    warnings.warn(f"fuser: waited {_lock_wait_from_env():g} s for another process to build "
                                  f"cache entry {key[:16]}; building it here", RuntimeWarning, stacklevel=4)
                    return None
                time.sleep(_LOCK_POLL_S)
                continue
            except OSError:  # a file system without flock
                os.close(fd)
                return None
            try:  # the holder we waited for unlinked this file: lock the one now at the path
                if os.fstat(fd).st_ino == os.stat(path).st_ino:
                    return fd
            except OSError:
                pass
            os.close(fd)

    def clear_memory(self) -> None:
        with self._lock:
            self._mem.clear()

    # -- internals
    def _remember(self, e: CacheEntry) -> None:
        self._mem[e.key] = e
        self._mem.move_to_end(e.key)
        while len(self._mem) > self.max_memory_entries:
            self._mem.popitem(last=False)

    def _read_disk(self, key: str) -> CacheEntry | None:
        path = self._meta_path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError):
            self.stats["corrupt"] += 1
            return None
        try:
            d = json.loads(text)
            if d.pop("digest") != _record_digest(d):
                raise ValueError("the entry does not match its digest")
            if d["layout"] != _LAYOUT or d["key"] != key:
                raise ValueError("foreign entry")
            payloads = {}
            for name, digest in d["payloads"].items():
                body = self._payload_path(key, name).read_text(encoding="utf-8")
                if _sha(body) != digest:
                    raise ValueError(f"payload {name} does not match its digest")
                payloads[name] = body
            meta = d["meta"]
            if not isinstance(meta, dict):
                raise ValueError("meta is not an object")
            return CacheEntry(key, payloads, meta)
        except Exception:  # truncated/garbled/inconsistent: a miss, rewritten by put()
            self.stats["corrupt"] += 1
            return None

    def _write_disk(self, e: CacheEntry) -> int | None:
        """Write the entry; the bytes written, or None when the directory is not writable."""
        try:
            for name, body in e.payloads.items():
                _atomic_write(self._payload_path(e.key, name), body)
            record = {"layout": _LAYOUT, "key": e.key, "meta": e.meta,
                      "payloads": {n: _sha(b) for n, b in e.payloads.items()}}
            record["digest"] = _record_digest(record)
            meta_text = json.dumps(record, sort_keys=True)
            # the metadata goes last: it is the commit point of the entry
            _atomic_write(self._meta_path(e.key), meta_text)
            return sum(len(t.encode()) for t in (meta_text, *e.payloads.values()))
        except OSError as err:
            self.stats["write_errors"] += 1
            if not self._warned:
                self._warned = True
                warnings.warn(f"fuser: kernel cache directory {self.directory} is not writable "
                              f"({err}); caching in memory only", RuntimeWarning, stacklevel=3)
            return None

    def _touch(self, key: str) -> None:
        """Mark the entry on disk as just used (_evict reads the newest mtime of its files).

        Done on every hit, limit or not: processes sharing the directory may set other limits."""
        if self.disk:
            try:
                os.utime(self._meta_path(key))
            except OSError:  # evicted meanwhile, or a read-only cache: only recency is lost
                pass

    def _enforce_limit(self, key: str, written: int) -> None:
        # A scan stats every file (about 0.5 s for 20k entries), so it runs on this process's
        # first write and then only when the last scan's total plus our writes since is over
        # the limit; other processes' writes are counted at our next scan (and at theirs).
        with self._evict_lock:
            if self._disk_bytes is not None:
                self._disk_bytes += written
                if self._disk_bytes <= self.max_bytes:
                    return
            self._disk_bytes = self._evict(keep=key)

    def _evict(self, keep: str) -> int | None:
        """Delete least recently used entries until the disk layer fits in max_bytes; the
        bytes left (None when the directory cannot be listed: scan again next time).

        Another process may be writing or evicting in the same directory, so any file can
        vanish between the listing and its stat/unlink: those are skipped, never raised."""
        sizes: dict[str, int] = {}      # key -> bytes of all its files
        recency: dict[str, float] = {}  # key -> newest mtime of its files
        files: dict[str, list[Path]] = {}
        now = time.time()
        try:
            shards = [d for d in os.scandir(self.directory / _LAYOUT) if d.is_dir()]
        except OSError:
            return None
        for shard in shards:
            try:
                listing = list(os.scandir(shard.path))
            except OSError:
                continue
            for f in listing:
                try:
                    st = f.stat(follow_symlinks=False)
                except OSError:
                    continue
                if f.name.startswith("."):  # a temporary file of a write in progress
                    if f.name.endswith(".tmp") and now - st.st_mtime > _STALE_TMP_S:
                        _unlink(Path(f.path))
                    continue
                # a hit touches the .json and a write renews every file, so the newest
                # mtime is the last use (and an entry still being written counts as new)
                key = f.name.partition(".")[0]
                sizes[key] = sizes.get(key, 0) + st.st_size
                recency[key] = max(recency.get(key, 0.0), st.st_mtime)
                files.setdefault(key, []).append(Path(f.path))
        total = sum(sizes.values())
        if total <= self.max_bytes:
            return total
        # down to 90% of the limit: at 100%, every later put would pass it and scan again
        # (a full 1 GiB cache of ~20k files cost each compile a half-second scan)
        low = self.max_bytes - self.max_bytes // 10
        for key in sorted((k for k in sizes if k != keep), key=lambda k: recency[k]):
            if total <= low:
                break
            if not any(p.name.endswith(".json") for p in files[key]) and now - recency[key] < _STALE_TMP_S:
                # payloads without their .json: a write in progress (the .json comes last).
                # Deleting them now would leave the writer's .json naming missing payloads.
                continue
            # the .json first: from then on readers see a miss, not a half-deleted entry
            for path in sorted(files[key], key=lambda p: not p.name.endswith(".json")):
                _unlink(path)
            total -= sizes[key]
            self.stats["evicted"] += 1
        return total

    def keys_on_disk(self) -> Iterable[str]:
        root = self.directory / _LAYOUT
        if not root.is_dir():
            return []
        return sorted(p.name[:-5] for p in root.glob("*/*.json"))


_default: KernelCache | None = None
_default_lock = threading.Lock()
_SETTINGS = ("FUSER_CACHE_DIR", "XDG_CACHE_HOME", "FUSER_CACHE", "FUSER_CACHE_MAX_BYTES")


def default_cache() -> KernelCache:
    """The process-wide cache for the environment's cache settings (FUSER_CACHE_DIR,
    XDG_CACHE_HOME, FUSER_CACHE, FUSER_CACHE_MAX_BYTES). When one of them changes, the next call
    opens the cache they now name, with an empty memory layer, so that a program (or a test)
    that points FUSER_CACHE_DIR elsewhere never gets kernels from the old directory. A cache a
    program installs itself (`cache._default = KernelCache(...)`) is kept whatever they say."""
    global _default
    settings = tuple(os.environ.get(name) for name in _SETTINGS)
    current = _default
    opened_for = getattr(current, "opened_for", None)  # (None: installed by hand)
    if current is None or (opened_for is not None and opened_for != settings):
        with _default_lock:
            if _default is current:
                fresh = KernelCache()
                fresh.opened_for = settings
                _default = fresh
    return _default


# ------------------------------------------------------------ programs in the cache

def put_program(cache: KernelCache, key: str, program: Any) -> CacheEntry:
    """Store a runtime Program: its PTX as a payload, the rest as metadata."""
    return cache.put(key, {"ptx": program.ptx},
                     {"program": json.loads(program.to_json(include_ptx=False))})


def get_program(cache: KernelCache, key: str) -> Any:
    """The Program stored under ``key``, or None (also when the entry is unreadable)."""
    from .plan import Program
    e = cache.get(key)
    if e is None:
        return None
    try:
        return Program.from_json(json.dumps(e.meta["program"]), ptx=e.payloads["ptx"])
    except Exception:
        cache.stats["corrupt"] += 1
        return None
