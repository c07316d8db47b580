"""Malformed topology and experiment documents, made by mutating the bundled files (seeded,
reproducible): byte-level damage (flips, truncation, non-UTF-8, NUL), YAML-level damage
(aliases, deep nesting, broken indentation) and structure-level damage (values of the wrong
type, unknown keys, missing keys, lists for mappings). Used by test_fuzz_inputs.py and
runnable alone for a longer campaign:

    .venv/bin/python -m tests.fuzz.fuzz_inputs 20000 [seed]
"""

from __future__ import annotations

import io
import random
import shutil
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WEIRD = [None, True, -1, 0, 2**70, 1e308, float("nan"), "", "x" * 300, "9000", "10ms", "1e3mbit", "-5%",
         "h1", "ll", "../../etc/passwd", [], {}, [1, 2], {"a": 1}, "links[0]", "é∂", "\u202e", "a:b:c"]


def seed_files() -> list[Path]:
    return sorted((ROOT / "topologies").glob("*.yaml")) + sorted(
        p for p in (ROOT / "experiments").glob("*.yaml") if not p.name.endswith(".reference.yaml"))


def _leaves(obj, path=(), above=frozenset()):
    """Every (path, node) of a parsed document; a node that contains itself (a document put
    inside itself, or a YAML alias) is not descended into again, and depth stops at 40."""
    if isinstance(obj, (dict, list)) and (id(obj) in above or len(path) > 40):
        return
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from _leaves(v, path + (k,), above | {id(obj)})
    elif isinstance(obj, list):
        yield path, obj
        for i, v in enumerate(obj):
            yield from _leaves(v, path + (i,), above | {id(obj)})
    else:
        yield path, obj


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def mutate_structure(rng: random.Random, data) -> str:
    for _ in range(rng.randint(1, 3)):
        spots = [p for p, _ in _leaves(data) if p]
        if not spots:
            break
        path = rng.choice(spots)
        op = rng.random()
        try:
            if op < 0.55:
                _set(data, path, rng.choice(WEIRD))
            elif op < 0.7:
                parent = data
                for p in path[:-1]:
                    parent = parent[p]
                del parent[path[-1]]
            elif op < 0.85:
                parent = data
                for p in path[:-1]:
                    parent = parent[p]
                if isinstance(parent, dict):
                    parent[rng.choice(["bogus", "mtuu", "mode", "1", "endpoints"])] = rng.choice(WEIRD)
                else:
                    parent.append(rng.choice(WEIRD))
            elif rng.random() < 0.1:
                _set(data, path, [data])  # the document inside itself: dumped as a recursive alias
                break
            else:
                _set(data, path, {"wrapped": rng.choice(WEIRD)})
        except (KeyError, IndexError, TypeError):
            pass
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True) if rng.random() < 0.9 else repr(data)


def mutate_bytes(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    op = rng.randrange(9)
    if op == 0 and b:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 1:  # truncate
        del b[rng.randrange(len(b) + 1):]
    elif op == 2:  # latin-1 / invalid UTF-8
        b[rng.randrange(len(b) + 1):0] = rng.choice([b"\xff\xfe", b"\xe9t\xe9", b"\xc3", b"\x80\x80"])
    elif op == 3:  # NUL / binary
        b[rng.randrange(len(b) + 1):0] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif op == 4:  # break indentation
        lines = bytes(b).split(b"\n")
        i = rng.randrange(len(lines))
        lines[i] = b" " * rng.randint(1, 7) + lines[i]
        b = bytearray(b"\n".join(lines))
    elif op == 5:  # deep nesting
        d = rng.choice([70, 500, 5000])
        b += b"\nextra: " + b"[" * d + b"]" * d + b"\n"
    elif op == 6:  # alias bomb
        n = rng.randint(6, 10)
        bomb = [b'l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
        bomb += [f"l{i}: &l{i} [{','.join([f'*l{i-1}'] * 9)}]".encode() for i in range(1, n)]
        b = bytearray(b"\n".join(bomb) + b"\n") if rng.random() < 0.5 else b + b"\n" + b"\n".join(bomb) + b"\n"
    elif op == 7:  # duplicate or drop lines
        lines = bytes(b).split(b"\n")
        i = rng.randrange(len(lines))
        lines.insert(i, lines[rng.randrange(len(lines))]) if rng.random() < 0.5 else lines.pop(i)
        b = bytearray(b"\n".join(lines))
    else:  # YAML syntax debris
        b[rng.randrange(len(b) + 1):0] = rng.choice([b": :", b"- [", b"{", b"&a", b"*nope", b"!!python/object:os.system",
                                                       b"\t", b"'", b'"', b"? ", b"%YAML 9.9\n---"])
    return bytes(b)


def documents(n: int, seed: int, workdir: Path):
    """Yield (path, label) for n mutated documents written under workdir, which mirrors the
    repository layout so experiments find their topologies and references."""
    rng = random.Random(seed)
    for d in ("topologies", "experiments"):
        shutil.copytree(ROOT / d, workdir / d, dirs_exist_ok=True)
    seeds = seed_files()
    for i in range(n):
        src = rng.choice(seeds)
        raw = src.read_bytes()
        if rng.random() < 0.5:
            out = mutate_bytes(rng, raw)
            label = "bytes"
        else:
            out = mutate_structure(rng, yaml.safe_load(raw)).encode()
            label = "structure"
        path = workdir / src.parent.name / f"fuzz-{i}-{src.name}"
        path.write_bytes(out)
        yield path, f"{label} mutation of {src.name}"


def check(path: Path) -> tuple[int, str]:
    """Run `linklab validate` in-process; a traceback propagates (that is the bug we look for)."""
    from linklab.cli import main
    import traceback
    err, out = io.StringIO(), io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(out):
            rc = main(["validate", str(path)])
    except Exception:  # a traceback: the bug this looks for; kept with its document
        return -1, traceback.format_exc()
    return rc, err.getvalue()


def campaign(n: int, seed: int, workdir: Path, part: tuple[int, int] = (0, 1)) -> dict:
    """Check the campaign's documents; part (k, m): only every m-th, from the k-th (the same
    documents, so m parts side by side check exactly what one would)."""
    counts = {"documents": 0, "exit2": 0, "valid": 0, "other": 0, "no_path": 0, "traceback": 0, "slowest_s": 0.0}
    bad = []
    for i, (path, label) in enumerate(documents(n, seed, workdir)):
        if i % part[1] != part[0]:
            path.unlink()
            continue
        t0 = time.monotonic()
        rc, err = check(path)
        counts["slowest_s"] = max(counts["slowest_s"], round(time.monotonic() - t0, 3))
        counts["documents"] += 1
        if rc == 0:
            counts["valid"] += 1
            path.unlink()
        elif rc == 2 and str(path) in err:
            counts["exit2"] += 1
            path.unlink()
        else:
            counts["traceback" if rc == -1 else "other" if rc != 2 else "no_path"] += 1
            bad.append((str(path), label, rc, err[-400:]))
    counts["bad"] = bad[:10]
    return counts


if __name__ == "__main__":
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    t0 = time.monotonic()
    d = Path(tempfile.mkdtemp(prefix="linklab-fuzz-"))  # failing documents are kept there
    result = campaign(n, seed, d)
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(result)
    sys.exit(0 if not result["bad"] else 1)
