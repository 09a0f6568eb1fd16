#!/usr/bin/env python3
"""Scrubber throughput on 1 MB inputs: ctxward.core.scrub, a plain `re` baseline, detect-secrets.

    .venv/bin/python bench/scrub_throughput.py [--runs 7] [--size 1048576] [--against CHECKOUT]

Three inputs, all generated here (fake secrets only, built from pieces):
- "dense": one secret every ~150 bytes (issue 15's case: a log or a dump full of credentials),
  of ~50 kinds, one-line each, between lines of ordinary text;
- "mixed": agent transcript lines, logs, test output, git log, code, YAML, JSON, prose and base64
  images, with a few secrets of several kinds scattered through it (one per ~100 KB);
- "clean": the same kind of text without secrets.
Each figure is the median of --runs runs, in CPU time (the scrubber is single-threaded: on an idle
machine that is its wall time; on a shared one, it leaves out the other processes), the
scrubbers timed in turn within each run, so that load weighs on all alike. The baseline
is a naive 15-regex scrubber (one `re` per type, no allowlist): the ratio ctxward / baseline
says how much of the cost is the vetting that keeps precision. "regexes alone" runs each of
ctxward's rules' own matching over the text with nothing else (no anchor test, no vetting, no
merge): what the table's scans cost by themselves. detect-secrets 1.5.0 (a dev
dependency: `pip install -e .[dev]`) runs its default plugins line by line through its public
`scan_line` on the first 64 KB of each input, once (it is ~500x slower); the bench says so and
goes on when it is missing. `--against CHECKOUT` times another checkout's scrubber in the same
runs (`git worktree add /tmp/main main`, to see what a change costs), in a child process that
imports it from there, and says whether its redactions are the same on every input. Issue 15's
targets: >= 20 MB/s on dense text, >= 30 MB/s on clean.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from ctxward.core.scrub import scrub

ALNUM = string.ascii_letters + string.digits
WORDS = str.split(
    "the a an to of and in for on with token key password auth pass compass bypass passed "
    "secret service schema migration index route config deploy refactor keyboard monkey tokens "
    "author reindex value returns request response user session cache endpoint handler build "
    "test failing fixed now see also because when then"
)


def _rand(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _block(rng: random.Random) -> str:
    kind = rng.randrange(13)
    if kind == 0:
        return (
            f"2026-07-0{rng.randint(1, 9)}T12:{rng.randint(10, 59)}:00Z INFO "
            f"[req {_uuid(rng)}] GET /api/v1/users/{rng.randint(1, 9999)} 200 "
            f"{rng.randint(1, 99)}ms\n"
        )
    if kind == 1:
        name = _rand(rng, 8, string.ascii_lowercase)
        return f"tests/test_{name}.py::test_{name}_token PASSED [{rng.randint(1, 99)}%]\n"
    if kind == 2:
        return (
            f"commit {rng.getrandbits(160):040x}\nAuthor: Dev <dev@example.com>\n"
            f"Date:   Tue Jul 1 12:00:00 2026\n\n    fix: refresh the auth token before expiry\n\n"
        )
    if kind == 3:
        record = {
            "id": _uuid(rng),
            "object": "response",
            "usage": {"input_tokens": rng.randint(1, 9999), "output_tokens": rng.randint(1, 999)},
            "max_tokens": 4096,
            "sha256": f"{rng.getrandbits(256):064x}",
        }
        return json.dumps(record) + "\n"
    if kind == 4:
        return (
            "    def authenticate(self, username: str, password: str) -> Token:\n"
            "        user = self.users.get(username)\n"
            "        if user is None or not verify(password, user.password_hash):\n"
            '            raise AuthError("invalid credentials")\n'
            "        key = cache_key(user.id)\n"
            "        return create_access_token(user)\n"
        )
    if kind == 5:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40))) + ".\n"
    if kind == 6:
        return "data:image/png;base64," + base64.b64encode(rng.randbytes(450)).decode() + "\n"
    if kind == 7:
        return (
            "database:\n  host: db.internal\n  port: 5432\n  pool_size: 10\n"
            "  password: ${DB_PASSWORD}\nlogging:\n  level: info\n"
        )
    if kind == 8:
        text = (
            f"I updated the auth endpoint and the schema migration; the key change is in "
            f"backend/routers/auth.py (see PR #{rng.randint(1, 999)})."
        )
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        return json.dumps({"type": "assistant", "uuid": _uuid(rng), "message": message}) + "\n"
    if kind == 9:
        return (
            '  File "/usr/lib/python3.11/site-packages/app/auth.py", line 42, in login\n'
            "    token = tokens[key]\nKeyError: 'token'\n"
        )
    if kind == 10:
        return "| key | value |\n|---|---|\n| passes | 12 |\n| keyboard | us |\n"
    if kind == 11:
        return "export PATH=/usr/local/bin:$PATH\nexport API_KEY=${API_KEY}\npassword: ********\n"
    digest = f"{rng.getrandbits(256):064x}"
    return f"+ docker pull ghcr.io/org/app@sha256:{digest}\n+ kubectl rollout status deploy/api\n"


def _secret(rng: random.Random) -> str:
    kinds: list[Callable[[], str]] = [
        lambda: "GITHUB_TOKEN=" + "gh" + "p_" + _rand(rng, 36) + "\n",
        lambda: "curl -H 'Authorization: Bearer " + _rand(rng, 40) + "' https://api\n",
        lambda: "aws_secret_access_key = " + _rand(rng, 40, ALNUM + "/+") + "\n",
        lambda: "DATABASE_URL=postgres://app:" + _rand(rng, 16) + "@db:5432/app\n",
        lambda: "OPENAI_API_KEY=" + "s" + "k-proj-" + _rand(rng, 64) + "\n",
        lambda: '{"password": "' + _rand(rng, 14) + '"}\n',
        lambda: (
            "-----BEGIN RSA PRI"
            + "VATE KEY-----\n"
            + "\n".join(_rand(rng, 64, ALNUM + "+/") for _ in range(12))
            + "\n-----END RSA PRI"
            + "VATE KEY-----\n"
        ),
    ]
    return rng.choice(kinds)()


def _dense_secret(rng: random.Random) -> str:
    """One line holding one secret, of many kinds (the prefixes are split, as in the tests)."""
    hexa, b64 = "0123456789abcdef", ALNUM + "+/"
    kinds: list[Callable[[], str]] = [
        lambda: "GITHUB_TOKEN=" + "gh" + "p_" + _rand(rng, 36),
        lambda: "curl -H 'Authorization: Bearer " + _rand(rng, 40) + "' https://api",
        lambda: "aws_secret_access_key = " + _rand(rng, 40, b64),
        lambda: "DATABASE_URL=postgres://app:" + _rand(rng, 16) + "@db:5432/app",
        lambda: "OPENAI_API_KEY=" + "s" + "k-proj-" + _rand(rng, 64),
        lambda: '{"password": "' + _rand(rng, 14) + '"}',
        lambda: "export GITLAB_TOKEN=" + "gl" + "pat-" + _rand(rng, 20),
        lambda: "stripe.api_key = '" + "sk" + "_live_" + _rand(rng, 24) + "'",
        lambda: "//registry.npmjs.org/:_authToken=" + "np" + "m_" + _rand(rng, 36),
        lambda: "HF_TOKEN=" + "h" + "f_" + _rand(rng, 34),
        lambda: "sendgrid: " + "S" + "G." + _rand(rng, 22) + "." + _rand(rng, 43),
        lambda: "doctl auth init -t " + "do" + "p_v1_" + _rand(rng, 64, hexa),
        lambda: "mysql -uroot -p" + _rand(rng, 14) + " shop",
        lambda: "git clone https://" + _rand(rng, 40) + "@git.example.com/o/r",
        lambda: '  - name: DB_PASSWORD\n    value: "' + _rand(rng, 16) + '"',
        lambda: "SecretID:  " + _uuid(rng),
        lambda: 'requests.get(url, auth=("deploy", "' + _rand(rng, 14) + '"))',
        lambda: "AccountKey=" + _rand(rng, 86, b64) + "==;EndpointSuffix=core",
        lambda: "DATABRICKS_HOST=x " + "da" + "pi" + _rand(rng, 32, hexa),
        lambda: "xoxb-" + str(rng.randint(10**10, 10**11)) + "-" + _rand(rng, 24),
    ]
    return rng.choice(kinds)() + "\n"


def dense_corpus(size: int, seed: int = 1) -> str:
    """About `size` characters, one secret every ~150 bytes."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        filler = _block(rng)
        filler = filler[: rng.randint(40, 110)].rsplit(" ", 1)[0] + "\n"
        secret = _dense_secret(rng)
        parts += [filler, secret]
        total += len(filler) + len(secret)
    return "".join(parts)[:size]


def corpus(size: int, *, secrets: bool, seed: int = 1) -> str:
    """About `size` characters of agent-session text; with `secrets`, ~one per 100 KB."""
    rng = random.Random(seed)
    parts: list[str] = []
    total, next_secret = 0, 50_000
    while total < size:
        block = _block(rng)
        parts.append(block)
        total += len(block)
        if secrets and total > next_secret:
            next_secret += 100_000
            block = _secret(rng)
            parts.append(block)
            total += len(block)
    return "".join(parts)[:size]


# A naive scrubber: one regex per secret type, applied one after another, no allowlists.
NAIVE_PATTERNS = [
    re.compile(p)
    for p in (
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        r"-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----",
        r"Bearer\s+[A-Za-z0-9\-._~+/]+=*",
        r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
        r"gh[pousr]_[A-Za-z0-9]{36}",
        r"github_pat_\w{82}",
        r"sk-[A-Za-z0-9_-]{20,}",
        r"AKIA[0-9A-Z]{16}",
        r"(?i)aws_secret_access_key\s*[=:]\s*\S+",
        r"AIza[0-9A-Za-z_-]{35}",
        r"xox[abposr]-[0-9A-Za-z-]+",
        r"(?i)heroku.{0,20}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"[a-z+]+://[^:\s/]+:[^@\s/]+@",
        r"(?i)(?:api_?key|token|secret|password)\s*[:=]\s*['\"]?[^\s'\"]+",
        r"(?i)export\s+\w*(?:KEY|TOKEN|SECRET|PASSWORD)\w*=\S+",
    )
]


def naive_scrub(text: str) -> str:
    for pattern in NAIVE_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    return text


def regexes_alone(text: str) -> None:
    """Every rule's own matching over `text` (its regex, or the linear finder it has instead),
    with no anchor test, no vetting and no merge: what the table's scans cost with nothing else
    around them (on secret-dense text, the ceiling of this design: vetting only adds to it)."""
    from ctxward.core.scrub.engine import RULES
    from ctxward.core.scrub.rules import regex

    lowered = text.lower()
    for rule in RULES:
        haystack = lowered if rule.on_lowered else text
        pattern = regex(rule.pattern)
        matches = rule.matches
        for _ in pattern.finditer(haystack) if matches is None else matches(pattern, haystack):
            pass


def median_mb_per_s(timers: list[Callable[[], float]], text: str, runs: int) -> list[float]:
    """Each timer's median MB/s over `runs` runs, the timers taken in turn within each run (on a
    shared machine, a burst of load then weighs on all of them alike). A timer runs its scrubber
    once on `text` and returns the CPU seconds it took (the scrubber is one thread)."""
    timings: list[list[float]] = [[] for _ in timers]
    for _ in range(runs):
        for timer, spent in zip(timers, timings, strict=True):
            spent.append(timer())
    size = len(text.encode("utf-8"))
    return [size / statistics.median(spent) / 1e6 for spent in timings]


def cpu_timer(function: Callable[[str], object], text: str) -> Callable[[], float]:
    def timer() -> float:
        start = time.process_time()
        function(text)
        return time.process_time() - start

    return timer


class Checkout:
    """Another checkout's scrubber, in a child process that imports it from `root/lib` and runs
    this file's inputs (`--serve`): asked for an input by name, it scrubs it once and answers
    with the CPU seconds it took and a digest of its redactions."""

    def __init__(self, root: str, size: int) -> None:
        import subprocess

        lib = Path(root).resolve() / "lib"
        if not (lib / "ctxward" / "core" / "scrub").is_dir():
            raise SystemExit(f"--against: {root} is not a ctxward checkout (no lib/ctxward)")
        self.root = root
        self.child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(lib), "--size", str(size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, name: str) -> tuple[float, str]:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(name + "\n")
        self.child.stdin.flush()
        seconds, digest = self.child.stdout.readline().split()
        return float(seconds), digest

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait()


def redactions_digest(redactions: list[Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(redactions, sort_keys=True).encode()).hexdigest()


def serve(lib: str, size: int) -> int:
    """`--serve LIB`: the child of `--against`, with LIB's scrubber in place of this checkout's."""
    sys.path.insert(0, lib)
    for name in [m for m in sys.modules if m == "ctxward" or m.startswith("ctxward.")]:
        del sys.modules[name]
    import importlib

    theirs = importlib.import_module("ctxward.core.scrub").scrub  # LIB's, not this checkout's
    texts = dict(inputs(size))
    for line in sys.stdin:
        text = texts[line.strip()]
        start = time.process_time()
        _, redactions = theirs(text)
        spent = time.process_time() - start
        print(spent, redactions_digest(redactions), flush=True)
    return 0


def inputs(size: int) -> list[tuple[str, str]]:
    return [
        ("dense (1 per ~150 B)", dense_corpus(size)),
        ("mixed (with secrets)", corpus(size, secrets=True)),
        ("clean (no secrets)", corpus(size, secrets=False)),
    ]


def detect_secrets_mb_per_s(text: str) -> float | None:
    """detect-secrets 1.5.0's default plugins over `text`, line by line; None when missing."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with default_settings():
        start = time.perf_counter()
        for line in text.splitlines():
            for _ in scan_line(line):
                pass
        return len(text.encode("utf-8")) / (time.perf_counter() - start) / 1e6


DETECT_SECRETS_BYTES = 64 * 1024


# MB/s on 1 MB of each input: the scrubber's targets (docs/compression.md); mixed text's is the
# benchmark report's own (bench/report.py checks all three).
TARGETS = {"dense": 20.0, "mixed": 20.0, "clean": 30.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument(
        "--against",
        metavar="CHECKOUT",
        help="another checkout (e.g. a worktree of main) whose scrubber is timed in the same "
        "runs: its MB/s, the ratio, and whether its redactions are the same",
    )
    parser.add_argument("--serve", metavar="LIB", help=argparse.SUPPRESS)  # --against's child
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.size)
    checkout = Checkout(args.against, args.size) if args.against else None
    rows = []
    compared = []
    for name, text in inputs(args.size):
        timers = [cpu_timer(f, text) for f in (scrub, naive_scrub, regexes_alone)]
        if checkout is not None:
            timers.append(lambda name=name: checkout.ask(name)[0])  # type: ignore[misc]
        ours, naive, alone, *theirs = median_mb_per_s(timers, text, args.runs)
        other = detect_secrets_mb_per_s(text[:DETECT_SECRETS_BYTES])
        redactions = scrub(text)[1]
        found = len(redactions)
        rows.append((name, ours, naive, alone, other, found, TARGETS[name.split()[0]]))
        if checkout is not None:
            same = checkout.ask(name)[1] == redactions_digest(redactions)
            compared.append((name, ours, theirs[0], same))
    if checkout is not None:
        checkout.close()
    print(f"scrub throughput on {args.size / 2**20:.1f} MiB inputs, median of {args.runs} runs")
    print(
        f"{'input':<22} {'ctxward MB/s':>13} {'re MB/s':>8} {'ratio':>6} {'regexes alone':>14} "
        f"{'detect-secrets MB/s':>20} {'ratio':>7} {'redactions':>11} {'target':>8}"
    )
    missing = False
    for name, ours, naive, alone, other, found, target in rows:
        if other is None:
            missing = True
            theirs_column = f"{'-':>20} {'-':>7}"
        else:
            theirs_column = f"{other:>20.2f} {ours / other:>6.0f}x"
        verdict = "met" if ours >= target else "MISSED"
        print(
            f"{name:<22} {ours:>13.1f} {naive:>8.1f} {ours / naive:>5.2f}x {alone:>14.1f} "
            f"{theirs_column} {found:>11} {target:>5.0f} {verdict}"
        )
    if missing:
        print("detect-secrets is not installed (pip install -e .[dev]): its columns are empty")
    for name, ours, theirs_mb, same in compared:
        print(
            f"{name:<22} against {args.against}: {theirs_mb:.1f} MB/s, "
            f"ratio {ours / theirs_mb:.2f}x, redactions {'the same' if same else 'DIFFERENT'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
