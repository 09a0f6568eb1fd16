#!/usr/bin/env python3
"""Scrubber throughput on 1 MB inputs: ctxward.scrub against a naive 15-regex scrubber.

    .venv/bin/python bench/scrub_throughput.py [--runs 7] [--size 1048576]

Two inputs, both generated here (fake secrets only, built from pieces):
- "mixed": agent transcript lines, logs, test output, git log, code, YAML, JSON, prose and base64
  images, with a few secrets of several kinds scattered through it;
- "clean": the same kind of text without secrets.
Each figure is the median of --runs runs. The issue's target is ≥ 20 MB/s for ctxward.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from ctxward.scrub import scrub

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


def median_mb_per_s(function: Callable[[str], object], text: str, runs: int) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        function(text)
        timings.append(time.perf_counter() - start)
    return len(text.encode("utf-8")) / statistics.median(timings) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", type=int, default=1 << 20)
    args = parser.parse_args()
    rows = []
    for name, secrets in (("mixed (with secrets)", True), ("clean (no secrets)", False)):
        text = corpus(args.size, secrets=secrets)
        ours = median_mb_per_s(scrub, text, args.runs)
        naive = median_mb_per_s(naive_scrub, text, args.runs)
        found = len(scrub(text)[1])
        rows.append((name, ours, naive, found))
    print(f"scrub throughput on {args.size / 2**20:.1f} MiB inputs, median of {args.runs} runs")
    print(f"{'input':<22} {'ctxward MB/s':>13} {'naive MB/s':>11} {'ratio':>7} {'redactions':>11}")
    for name, ours, naive, found in rows:
        print(f"{name:<22} {ours:>13.1f} {naive:>11.1f} {ours / naive:>6.1f}x {found:>11}")
    worst = min(row[1] for row in rows)
    verdict = "meets" if worst >= 20 else "MISSES"
    print(f"slowest: {worst:.1f} MB/s ({verdict} the 20 MB/s target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
