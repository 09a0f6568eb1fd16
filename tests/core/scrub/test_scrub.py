"""Secret scrubbing: a labelled corpus of fake secrets, hard negatives, and properties.

Every secret here is generated at test time from pieces (a prefix split in two, random
characters), so no file in the repository holds a realistic-looking secret. The corpus measures
what the issue asks for: recall ≥ 99 % with no 8-character fragment of a secret surviving, and at
most 2 % of hard negatives changed.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxward.core import scrub as scrub_module
from ctxward.core.scrub import SECRET_TYPES, classify_key, find, is_placeholder, redact, scrub
from ctxward.core.scrub import assignments as scrub_assignments
from ctxward.core.scrub import engine as scrub_engine
from ctxward.core.scrub import rules as scrub_rules
from ctxward.core.scrub import tokens as scrub_tokens

ALNUM = string.ascii_letters + string.digits
UPPER32 = string.ascii_uppercase + "234567"
B64 = string.ascii_letters + string.digits + "+/"
HEX = "0123456789abcdef"
LOWER36 = string.ascii_lowercase + string.digits

# Prefixes split in two so that no literal in this file looks like a real credential.
GH = "gh"
SK = "s" + "k-"
PEM_RSA = "RSA PRI" + "VATE KEY"
PEM_KEY = "PRI" + "VATE KEY"
PEM_EC = "EC PRI" + "VATE KEY"
PEM_ENC = "ENCRYPTED PRI" + "VATE KEY"
PEM_SSH = "OPENSSH PRI" + "VATE KEY"


class Fake:
    """Fake secrets from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chars(self, n: int, alphabet: str = ALNUM) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            # A real token is random; make sure ours is too (mixed classes, no long runs).
            if alphabet != ALNUM or (
                any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            ):
                return value

    def uuid(self) -> str:
        h = self.chars(32, HEX)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def pem(self, label: str, lines: int = 6) -> str:
        body = "\n".join(self.chars(64, B64) for _ in range(lines)) + "\n" + self.chars(20, B64)
        return f"-----BEGIN {label}-----\n{body}==\n-----END {label}-----"

    def github(self, kind: str = "p") -> str:
        return f"{GH}{kind}_{self.chars(36)}"

    def github_pat(self) -> str:
        return "git" + f"hub_pat_{self.chars(22)}_{self.chars(59)}"

    def github_stateless(self) -> str:
        return f"{GH}s_{self.rng.randint(10**6, 10**7)}_{self.jwt()}"

    def openai(self) -> str:
        return f"{SK}{self.chars(20)}T3Blbk" + f"FJ{self.chars(20)}"

    def openai_project(self) -> str:
        return (
            f"{SK}proj-{self.chars(74, ALNUM + '_-')}T3Blbk" + f"FJ{self.chars(74, ALNUM + '_-')}"
        )

    def anthropic(self) -> str:
        return f"{SK}ant-api03-{self.chars(93, ALNUM + '_-')}AA"

    def jwt(self) -> str:
        def b64(data: dict[str, object]) -> str:
            raw = json.dumps(data, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        header = b64({"alg": "HS256", "typ": "JWT"})
        payload = b64({"sub": self.chars(12), "exp": self.rng.randint(10**9, 2 * 10**9)})
        return f"{header}.{payload}.{self.chars(43, ALNUM + '_-')}"

    def aws_id(self, prefix: str = "AKIA") -> str:
        return prefix[:2] + prefix[2:] + self.chars(16, UPPER32)

    def aws_secret(self) -> str:
        while True:
            value = self.chars(40, B64)
            if any(c.isupper() for c in value) and any(c.islower() for c in value):
                return value

    def google(self) -> str:
        return "AI" + "za" + self.chars(35, ALNUM + "_-")

    def slack(self, kind: str = "b") -> str:
        team, bot = self.rng.randint(10**10, 10**11), self.rng.randint(10**12, 10**13)
        return f"xo{'x'}{kind}-{team}-{bot}-{self.chars(24)}"

    def slack_app(self) -> str:
        number = self.rng.randint(10**12, 10**13)
        return f"xa{'pp'}-1-A{self.chars(10, UPPER32)}-{number}-{self.chars(64, HEX)}"

    def slack_webhook_path(self) -> str:
        return f"services/T{self.chars(8, UPPER32)}/B{self.chars(10, UPPER32)}/{self.chars(24)}"

    def heroku_v2(self) -> str:
        return "HR" + "KU-AA" + self.chars(58, ALNUM + "_-")

    def password(self) -> str:
        return self.chars(10) + self.rng.choice("!#%^+=") + self.chars(5)

    def token(self, n: int = 32) -> str:
        return self.chars(n)


@dataclass(frozen=True)
class Case:
    name: str
    doc: str
    secrets: tuple[str, ...]
    kind: str  # the expected redaction type of the first secret


def positives(fake: Fake) -> list[Case]:
    f = fake
    cases: list[Case] = []

    def add(name: str, kind: str, doc: str, *secrets: str) -> None:
        cases.append(Case(name, doc, secrets, kind))

    # -- private keys and certificates
    k = f.pem(PEM_SSH)
    add("ssh key file", "ssh_private_key", f"$ cat ~/.ssh/id_ed25519\n{k}\n$ ", k)
    k = f.pem(PEM_RSA)
    add("rsa key in log", "private_key", f"2026-07-01 DEBUG loaded key:\n{k}\nINFO ready", k)
    k = f.pem(PEM_EC)
    indented = k.replace("\n", "\n    ")
    add("ec key in yaml block", "private_key", f"tls:\n  key: |\n    {indented}", indented)
    k = f.pem(PEM_KEY)
    add(
        "pkcs8 key in service-account json",
        "private_key",
        json.dumps(
            {"type": "service_account", "private_key_id": f.chars(40, HEX), "private_key": k}
        ),
        json.dumps(k)[1:-1],
    )
    k = f.pem(PEM_ENC)
    add("encrypted pkcs8", "private_key", f"key.pem:\n{k}\n", k)
    body = "\n".join(f.chars(64, B64) for _ in range(4))
    iv = f.chars(32, HEX.upper())
    k = (
        f"-----BEGIN {PEM_RSA}-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{iv}\n\n"
        f"{body}\n-----END {PEM_RSA}-----"
    )
    add("legacy encrypted rsa", "private_key", k, k)
    truncated = f"-----BEGIN {PEM_RSA}-----\n" + "\n".join(f.chars(64, B64) for _ in range(5))
    add(
        "truncated key (no END line)",
        "private_key",
        f"```\n{truncated}\n```\n(output cut)",
        truncated,
    )
    c = f.pem("CERTIFICATE", 8)
    add("certificate", "certificate", f"server.crt:\n{c}\n", c)
    pgp = f.pem("PGP PRI" + "VATE KEY BLOCK")
    add("pgp private key", "private_key", f"gpg --export-secret-keys -a:\n{pgp}\n", pgp)
    key_lines = [f.chars(64, B64) for _ in range(3)]
    putty = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: dev\n"
        f"Public-Lines: 2\n{f.chars(64, B64)}\n{f.chars(20, B64)}\n"
        f"Private-Lines: 3\n{key_lines[0]}\n{key_lines[1]}\n{key_lines[2]}\n"
        f"Private-MAC: {f.chars(64, HEX)}"
    )
    add("putty key", "ssh_private_key", putty, *key_lines)

    # -- bearer, jwt
    t = f.token(40)
    add(
        "bearer in curl", "bearer_token", f"curl -H 'Authorization: Bearer {t}' https://api.x/v1", t
    )
    t = f.token(48) + "=="
    add(
        "bearer in http dump",
        "bearer_token",
        f"GET /v1/me HTTP/1.1\nHost: api\nauthorization: bearer {t}\n",
        t,
    )
    j = f.jwt()
    add("jwt in cookie", "jwt", f"Set-Cookie: session={j}; Path=/; HttpOnly", j)
    j = f.jwt()
    add("jwt as bearer", "jwt", json.dumps({"headers": {"Authorization": f"Bearer {j}"}}), j)
    j = f.jwt()
    add("jwt in url", "jwt", f"GET https://app.example.com/callback?id_token={j}&state=1", j)

    # -- github
    for kind in "pousr":
        t = f.github(kind)
        add(f"github {kind}", "github_token", f"remote: using token {t} for push", t)
    t = f.github()
    add("github token env", "github_token", f"GITHUB_TOKEN={t}\nCI=true", t)
    t = f.github_pat()
    add("github fine-grained pat", "github_token", f'{{"token": "{t}"}}', t)
    t = f.github_stateless()
    add("github stateless installation token", "github_token", f"token: {t}\n", t)
    t = f.github("s")
    add(
        "github token in clone url",
        "github_token",
        f"git clone https://x-access-token:{t}@github.com/o/r.git",
        t,
    )

    # -- openai / anthropic
    t = f.openai()
    add("openai legacy", "openai_key", f"export OPENAI_API_KEY={t}", t)
    t = f.openai_project()
    add("openai project key", "openai_key", f'client = OpenAI(api_key="{t}")', t)
    t = f.anthropic()
    add("anthropic key", "anthropic_key", f"ANTHROPIC_API_KEY={t}\n", t)
    t = f.anthropic()
    add("anthropic key in json", "anthropic_key", json.dumps({"env": {"ANTHROPIC_API_KEY": t}}), t)

    # -- generic assignments
    t = f.token()
    add("api_key env", "api_key", f"API_KEY={t}\nDEBUG=false", t)
    t = f.token()
    add("api_key yaml", "api_key", f"service:\n  api_key: {t}\n  timeout: 30", t)
    t = f.token()
    add("apiKey json", "api_key", json.dumps({"apiKey": t, "region": "eu"}), t)
    t = f.token()
    add("x-api-key header", "api_key", f"X-Api-Key: {t}\nAccept: */*", t)
    t = f.token()
    add("ini secret", "secret", f"[oauth]\nclient_id = app\nclient_secret = {t}\n", t)
    t = f.token(24)
    add("toml token", "token", f'[registry]\ntoken = "{t}"\n', t)
    t = f.token()
    add("cli flag", "token", f"$ deploy --token {t} --env prod", t)
    t = f.token()
    add("cli flag equals", "api_key", f"tool --api-key={t} run", t)
    p = f.password()
    add("password yaml", "password", f"db:\n  user: app\n  password: {p}\n", p)
    p = f.password()
    add("password json", "password", json.dumps({"username": "app", "password": p}), p)
    p = f.password()
    add("password docker-compose", "password", f"environment:\n  - POSTGRES_PASSWORD={p}\n", p)
    p = f.password()
    add("password libpq", "password", f'psql "host=db user=app password={p} dbname=x"', p)
    p = f.password()
    add(
        "password jdbc param",
        "password",
        f"jdbc:postgresql://db:5432/app?user=app&password={p}&ssl=true",
        p,
    )
    p = f.password()
    add("password xml", "password", f"<config><password>{p}</password></config>", p)
    p = f.password()
    add("password annotated default", "password", f'def connect(password: str = "{p}") -> None:', p)
    p = f.password()
    add("password cli", "password", f"mysqladmin --password={p} status", p)
    p = f.chars(14)
    add("PGPASSWORD", "password", f"PGPASSWORD={p} psql -h db", p)
    p = f.password()
    add(
        "escaped json in transcript",
        "password",
        json.dumps({"tool_input": json.dumps({"password": p})}),
        p,
    )
    words = " ".join(f.chars(6, string.ascii_lowercase) for _ in range(4))
    add("passphrase with spaces", "password", f'{{"passphrase": "{words}"}}', words)
    p = f.password().replace("#", "x")
    add("curl -u", "basic_auth", f"curl -u deploy:{p} https://ci.example.com/api", p)
    p = f.password()
    add("netrc", "password", f"machine api.example.com login me@example.com password {p}\n", p)
    user_pass = base64.b64encode(f"ci:{f.password()}".encode()).decode()
    add(
        "docker config auth",
        "token",
        json.dumps({"auths": {"registry.example.com": {"auth": user_pass}}}),
        user_pass,
    )
    t = f.token(40)
    add("secret_key_base", "secret", f"production:\n  secret_key_base: {t}\n", t)

    # -- aws
    i, s = f.aws_id(), f.aws_secret()
    add(
        "aws credentials file",
        "aws_access_key_id",
        f"[default]\naws_access_key_id = {i}\naws_secret_access_key = {s}\nregion = eu-west-1",
        i,
        s,
    )
    i, s, tok = f.aws_id("ASIA"), f.aws_secret(), f.token(120)
    add(
        "aws sts json",
        "aws_access_key_id",
        json.dumps({"Credentials": {"AccessKeyId": i, "SecretAccessKey": s, "SessionToken": tok}}),
        i,
        s,
        tok,
    )
    i, s = f.aws_id(), f.aws_secret()
    add(
        "aws credentials csv",
        "aws_access_key_id",
        f"User name,Access key ID,Secret access key\nci,{i},{s}\n",
        i,
        s,
    )
    s = f.aws_secret()
    add("aws secret env export", "aws_secret_access_key", f"export AWS_SECRET_ACCESS_KEY={s}", s)

    # -- google, slack, heroku
    g = f.google()
    add("google api key in js", "google_api_key", f'const firebaseConfig = {{ apiKey: "{g}" }};', g)
    g = f.google()
    add(
        "google api key in url",
        "google_api_key",
        f"https://maps.googleapis.com/maps/api/geocode/json?key={g}",
        g,
    )
    for kind in "bpa":
        t = f.slack(kind)
        add(f"slack xox{kind}", "slack_token", f"SLACK_TOKEN={t}", t)
    t = f.slack_app()
    add("slack app token", "slack_token", f"app_token: {t}", t)
    w = f.slack_webhook_path()
    add("slack webhook", "slack_webhook", f"curl -X POST https://hooks.slack.com/{w} -d '{{}}'", w)
    u = f.uuid()
    add("heroku api key", "heroku_api_key", f"HEROKU_API_KEY={u}\n", u)
    u = f.uuid()
    add("heroku key json", "heroku_api_key", json.dumps({"heroku_token": u}), u)
    t = f.heroku_v2()
    add("heroku v2 token", "heroku_api_key", f"heroku auth:token\n{t}\n", t)

    # -- connection strings
    p = f.password().replace("#", "x")
    add("postgres url", "postgres_url", f"DATABASE_URL=postgres://app:{p}@db.internal:5432/app", p)
    p = f.chars(20)
    add(
        "sqlalchemy url",
        "postgres_url",
        f'engine = create_engine("postgresql+psycopg2://app:{p}@db/app")',
        p,
    )
    p = f.chars(20)
    add("mysql url", "mysql_url", f"mysql://root:{p}@127.0.0.1:3306/shop", p)
    p = f.chars(24)
    add("redis url empty user", "redis_url", f"REDIS_URL=redis://:{p}@cache:6379/0", p)
    p = f.chars(24)
    add("rediss url", "redis_url", f"url: rediss://default:{p}@eu1.upstash.io:6379", p)
    p = f.chars(24)
    add("mongodb srv", "mongodb_url", f"mongodb+srv://admin:{p}@cluster0.ab1cd.mongodb.net/db", p)
    p = f.chars(16)
    add("amqp url", "url_password", f"broker_url = 'amqp://guest:{p}@rabbit:5672//'", p)

    # -- provider formats without a rule before issue 15 (each prefix split in two)
    a_, hx = ALNUM, HEX
    for name, kind, token in [
        ("gitlab pat", "gitlab_token", "gl" + "pat-" + f.chars(20, a_ + "_-")),
        ("stripe live", "stripe_key", "sk" + "_live_" + f.chars(24)),
        ("stripe restricted", "stripe_key", "rk" + "_live_" + f.chars(24)),
        ("stripe test", "stripe_key", "sk" + "_test_" + f.chars(24)),
        ("npm", "npm_token", "np" + "m_" + f.chars(36)),
        ("hugging face", "huggingface_token", "h" + "f_" + f.chars(34)),
        ("sendgrid", "sendgrid_key", "S" + "G." + f.chars(22) + "." + f.chars(43)),
        ("digitalocean", "digitalocean_token", "do" + "p_v1_" + f.chars(64, hx)),
        ("shopify", "shopify_token", "shp" + "at_" + f.chars(32, hx)),
        ("pypi", "pypi_token", "py" + "pi-AgEIcHlwaS5vcmc" + f.chars(60, a_ + "_-")),
        ("linear", "linear_key", "lin" + "_api_" + f.chars(40)),
        ("postman", "postman_key", "PM" + "AK-" + f.chars(24, hx) + "-" + f.chars(34, hx)),
        ("grafana", "grafana_token", "gl" + "sa_" + f.chars(32) + "_" + f.chars(8, hx)),
        ("vault", "vault_token", "hv" + "s." + f.chars(90, a_ + "_-")),
        ("supabase", "supabase_token", "sb" + "p_" + f.chars(40, hx)),
        ("figma", "figma_token", "fi" + "gd_" + f.chars(40, a_ + "_-")),
        ("replicate", "replicate_token", "r" + "8_" + f.chars(37)),
        ("groq", "groq_key", "gs" + "k_" + f.chars(52)),
        ("xai", "xai_key", "xa" + "i-" + f.chars(80)),
        ("perplexity", "perplexity_key", "pp" + "lx-" + f.chars(48)),
        ("tailscale", "tailscale_key", "ts" + "key-auth-" + f.chars(12) + "-" + f.chars(30)),
        ("buildkite", "buildkite_token", "bk" + "ua_" + f.chars(40, hx)),
        (
            "age",
            "age_secret_key",
            "AGE-SECRET" + "-KEY-1" + f.chars(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
        ),
        ("new relic", "newrelic_key", "NR" + "AK-" + f.chars(27, UPPER32)),
        ("sentry", "sentry_token", "sntr" + "ys_" + f.chars(80, a_ + "_=")),
        ("doppler", "doppler_token", "dp" + ".pt." + f.chars(43)),
        ("atlassian", "atlassian_token", "ATAT" + "T3" + f.chars(186, a_ + "_=-")),
        ("notion", "notion_token", "nt" + "n_" + f.chars(46)),
        ("mailgun", "mailgun_key", "ke" + "y-" + f.chars(32, hx)),
        ("square", "square_token", "sq0" + "atp-" + f.chars(22, a_ + "_-")),
        ("pulumi", "pulumi_token", "pu" + "l-" + f.chars(40, hx)),
        ("twilio", "twilio_key", "S" + "K" + f.chars(32, hx)),
        ("databricks", "databricks_token", "da" + "pi" + f.chars(32, hx)),
        ("docker hub", "docker_hub_token", "dc" + "kr_pat_" + f.chars(27, a_ + "_-")),
        ("airtable", "airtable_token", "pa" + "t" + f.chars(14) + "." + f.chars(64, hx)),
        ("langsmith", "langsmith_key", "ls" + "v2_pt_" + f.chars(32, hx) + "_" + f.chars(10, hx)),
        ("pinecone", "pinecone_key", "pc" + "sk_" + f.chars(5) + "_" + f.chars(64)),
        ("tavily", "tavily_key", "tv" + "ly-dev-" + f.chars(32)),
        (
            "terraform cloud",
            "terraform_cloud_token",
            f.chars(14, LOWER36) + ".atlas" + "v1." + f.chars(67, LOWER36),
        ),
        ("sourcegraph", "sourcegraph_token", "sg" + "p_" + f.chars(40, hx)),
        (
            "mapbox",
            "mapbox_token",
            "s" + "k.eyJ1Ijoi" + f.chars(40, a_ + "_-") + "." + f.chars(22, a_ + "_-"),
        ),
        (
            "discord",
            "discord_token",
            "M" + f.chars(25, a_) + "." + f.chars(6, a_) + "." + f.chars(38, a_ + "_-"),
        ),
    ]:
        add(
            f"{name} token in config",
            kind,
            f"{name.upper().replace(' ', '_')}_CRED: {token}\n",
            token,
        )
        add(f"{name} token in code", kind, f'client = Client("{token}")', token)
    k = f.chars(86, B64) + "=="
    add(
        "azure storage connection string",
        "azure_storage_key",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={k};EndpointSuffix=core",
        k,
    )

    k = f.chars(43, B64) + "="
    add(
        "azure service bus connection string",
        "azure_storage_key",
        f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={k}",
        k,
    )

    s = f.chars(40) + "%2B" + f.chars(3) + "%3D"
    add(
        "azure sas url",
        "azure_sas_token",
        "az storage blob download --blob-url 'https://acct.blob.core.windows.net/c/f.txt"
        f"?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-01-01T00%3A00%3A00Z&spr=https&sig={s}'",
        s,
    )
    s = f.chars(40) + "%3D"
    add(
        "azure sas connection string",
        "azure_sas_token",
        "BlobEndpoint=https://acct.blob.core.windows.net/;"
        f"SharedAccessSignature=sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2026-01-01&sig={s}",
        s,
    )
    t = "AA" + f.chars(33, ALNUM + "_-")
    bot = f.chars(10, string.digits)
    add("telegram bot token", "telegram_bot_token", f'bot = Bot("{bot}:{t}")', t)
    t = "AA" + f.chars(33, ALNUM + "_-")
    add(
        "telegram bot api url",
        "telegram_bot_token",
        f"curl https://api.telegram.org/bot{bot}:{t}/getUpdates",
        t,
    )
    t = f.chars(68, ALNUM + "_-")
    add(
        "discord webhook",
        "discord_webhook",
        f"DISCORD_URL=https://discord.com/api/webhooks/{f.chars(18, string.digits)}/{t}",
        t,
    )
    t = "00" + f.chars(40)
    add(
        "okta api token",
        "token",
        f'curl -H "Authorization: SSWS {t}" https://acme.okta.com/api/v1/users',
        t,
    )

    # -- contextual classes (issue 15)
    t = f.github()
    add("github token as url userinfo", "url_token", f"git clone https://{t}@github.com/o/r", t)
    t = f.token(40)
    add("token as url userinfo", "url_token", f"pip install git+https://{t}@git.example.com/x", t)
    p = f.chars(8) + "?#/!" + f.chars(4) + "$%@" + f.chars(4)
    add("url password with specials", "postgres_url", f"postgres://app:{p}@db.internal:5432/x", p)
    p = f.chars(10) + '\\"' + f.chars(6)
    add("json password with escaped quote", "password", '{"password": "' + p + '"}', p)
    p = f.chars(9) + "!$%" + f.chars(5)
    add("json password with specials", "password", json.dumps({"password": p}), p)
    p = f.chars(14)
    add("mysql -p attached", "password", f"mysql -u root -p{p} shop", p)
    p = f.chars(14)
    add("mysql -p quoted", "password", f"mysqldump -uroot -p'{p}' shop > x.sql", p)
    p = f.chars(14)
    add("sshpass -p space", "password", f"sshpass -p {p} ssh deploy@host", p)
    p = f.chars(14)
    add("docker login -p", "password", f"docker login -u ci -p {p} registry.example.com", p)
    p = f.chars(20)
    add("redis requirepass", "password", f"redis-server --requirepass {p} --port 6380", p)
    p = f.chars(16)
    add("redis-cli -a", "password", f"redis-cli -h cache -a {p} ping", p)
    p = f.password()
    add("docker run -e password", "password", f"docker run -e POSTGRES_PASSWORD={p} postgres:16", p)
    p = f.chars(18)
    add(
        "netrc across lines",
        "password",
        f"machine api.example.com\n  login deploy\n  password {p}\n",
        p,
    )
    p = f.password()
    add(
        "k8s env name/value",
        "password",
        f"env:\n  - name: DB_PASSWORD\n    value: {p}\n  - name: LOG_LEVEL\n    value: info\n",
        p,
    )
    t = f.token()
    add("xml key/value attributes", "api_key", f'<add key="ApiKey" value="{t}" />', t)
    t = f.token()
    add(
        "postman key/value",
        "token",
        json.dumps({"auth": {"bearer": [{"key": "token", "value": t, "type": "string"}]}}),
        t,
    )
    t = f.token()
    add("har header name/value", "api_key", json.dumps({"name": "X-Api-Key", "value": t}), t)
    pem = f.pem(PEM_RSA)
    wrapped = base64.b64encode(pem.encode()).decode()
    add(
        "kubeconfig client-key-data",
        "private_key",
        f"users:\n- user:\n    client-key-data: {wrapped}\n",
        wrapped,
    )
    p = f.password()
    add(
        "xml name/value elements",
        "password",
        f"<parameter><name>db_password</name>\n<value>{p}</value></parameter>",
        p,
    )
    t = "op" + "s_eyJ" + f.chars(200, ALNUM + "_-")
    add("1password service token", "onepassword_token", f"OP_SERVICE_ACCOUNT_TOKEN={t}", t)
    u = f.uuid()
    add("consul secret id", "consul_token", f"AccessorID:   {f.uuid()}\nSecretID:     {u}\n", u)
    u = f.uuid()
    add("consul token header", "consul_token", f"curl -H 'X-Consul-Token: {u}' http://c:8500", u)
    u = f.uuid()
    add("heroku cli output", "heroku_api_key", f"$ heroku auth:token\n{u}\n", u)
    u = f.uuid()
    add(
        "uuid password in netrc",
        "password",
        f"machine api.heroku.com login me@x.io password {u}\n",
        u,
    )
    p = f.chars(14)
    add("auth tuple in code", "password", f'requests.get(url, auth=("deploy", "{p}"))', p)
    p = f.chars(14)
    add("basic auth call", "password", f'auth = HTTPBasicAuth("deploy", "{p}")', p)
    t = f.token(40)
    add("bare token in prose", "token", f"I am using token {t} for the deploy.", t)
    t = f.token(32)
    add("bare key in prose", "api_key", f"The API key is {t}, keep it safe.", t)
    t = f.token(28)
    add(
        "value repeated elsewhere",
        "password",
        f"DB_PASSWORD={t}\n$ ./check {t} --verbose\nlogged {t}",
        t,
    )

    # -- export statements
    t = f.token()
    add("export secret", "env_export", f"export STRIPE_SECRET={t}\n", t)
    p = f.password()
    add("export password quoted", "env_export", f"export DB_PASS='{p}'\n", p)
    t = f.token()
    add("powershell env", "env_export", f'$env:SERVICE_TOKEN = "{t}"', t)
    return cases


WRAPPERS: dict[str, Callable[[str], str]] = {
    "plain": lambda doc: doc,
    "log": lambda doc: (
        f"2026-07-01T12:00:00Z INFO worker started\n{doc}\n2026-07-01T12:00:01Z INFO done\n"
    ),
    "markdown": lambda doc: f"Here is the output:\n\n```\n{doc}\n```\n\nLet me know.",
    "transcript": lambda doc: json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": doc}]},
        }
    ),
}


def _escaped(wrapper: str, secret: str) -> str:
    return json.dumps(secret)[1:-1] if wrapper == "transcript" else secret


def _fragments(secret: str, rest_of_doc: str) -> set[str]:
    """Every 8-character window of each line of `secret` that the document has nowhere else."""
    windows = set()
    for line in secret.splitlines():
        for i in range(len(line) - 7):
            window = line[i : i + 8]
            if window not in rest_of_doc:
                windows.add(window)
    return windows


def _measure(cases: list[Case]) -> tuple[int, int, list[str]]:
    found = total = 0
    misses: list[str] = []
    for case in cases:
        for wrapper, wrap in WRAPPERS.items():
            doc = wrap(case.doc)
            out, _ = scrub(doc)
            for secret in case.secrets:
                escaped = _escaped(wrapper, secret)
                assert escaped in doc, (case.name, wrapper)
                total += 1
                leaked = [w for w in _fragments(escaped, doc.replace(escaped, "")) if w in out]
                if leaked:
                    misses.append(
                        f"{case.name} [{wrapper}]: {leaked[0]!r} survived in {out[:300]!r}"
                    )
                else:
                    found += 1
    return found, total, misses


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recall_on_the_corpus(seed: int) -> None:
    found, total, misses = _measure(positives(Fake(seed)))
    assert total > 300
    assert found / total >= 0.99, "\n".join(misses)


def test_a_mixed_document_loses_every_secret_and_keeps_every_hard_negative() -> None:
    """All the positive cases and hard negatives, interleaved in one document (a long session
    log): no 8-character fragment of a secret survives, and every one-line hard negative is
    still there, byte for byte."""
    fake = Fake(21)
    cases = positives(fake)
    negatives = [doc for doc in hard_negatives(fake) if "\n" not in doc]
    # Separated by a blank line, as tool outputs in a log are (a truncated key block ends there).
    pieces = [p for pair in zip(cases, negatives * 3, strict=False) for p in (pair[0].doc, pair[1])]
    doc = "\n\n".join(pieces)
    out = redact(doc)
    for case in cases:
        for secret in case.secrets:
            rest = doc.replace(secret, "")
            assert not [w for w in _fragments(secret, rest) if w in out], case.name
    for negative in negatives:
        assert negative in out, negative


def test_every_secret_type_has_a_positive_case() -> None:
    kinds = {case.kind for case in positives(Fake(0))}
    assert len(kinds) >= 40
    missing = set(SECRET_TYPES) - kinds - {"basic_auth"}
    assert not missing
    assert basic_auth_case()[1] == "basic_auth"


def basic_auth_case() -> tuple[str, str]:
    creds = base64.b64encode(f"deploy:{Fake(9).password()}".encode()).decode()
    doc = f"Authorization: Basic {creds}"
    return doc, find(doc)[0]["type"]


@pytest.mark.parametrize("case", positives(Fake(7)), ids=lambda c: c.name)
def test_each_positive_is_typed(case: Case) -> None:
    out, redactions = scrub(case.doc)
    assert redactions, case.doc
    by_position = {r["position"]: r["type"] for r in redactions}
    first = case.secrets[0]
    start = case.doc.index(first)
    types = [kind for (s, e), kind in by_position.items() if s <= start < e]
    assert types == [case.kind], (case.doc, redactions)
    assert f"[REDACTED:{case.kind}]" in out


def test_redactions_are_exact_and_leave_the_neighbouring_lines_alone() -> None:
    """Each case whose one secret occurs once, between two lines of text: the redaction is the
    secret's exact span, and the lines around it come out byte-identical."""
    before, after = "before: nothing to see\n", "\nafter: nothing to see"
    checked = 0
    for case in positives(Fake(13)):
        (secret, *more) = case.secrets
        if more or case.doc.count(secret) != 1:
            continue
        doc = before + case.doc + after
        start = doc.index(secret)
        out = redact(doc)
        assert (start, start + len(secret)) in [r["position"] for r in find(doc)], case.name
        assert out.startswith(before) and out.endswith(after), case.name
        checked += 1
    assert checked >= 150


def hard_negatives(fake: Fake) -> list[str]:
    f = fake
    sha = f.chars(40, HEX)
    uuid = f.uuid()
    image = base64.b64encode(bytes(f.rng.randrange(256) for _ in range(600))).decode()
    pub = f.chars(200, B64)
    example_jwt = ".".join(
        [
            base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
            base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"John Doe","iat":1516239022}')
            .decode()
            .rstrip("="),
            f.chars(43, ALNUM + "_-"),
        ]
    )
    return [
        # placeholders and masks
        "api_key: <your-api-key>",
        "OPENAI_API_KEY=<your-openai-key>",
        "export API_KEY=${API_KEY}",
        "export GITHUB_TOKEN=$GITHUB_TOKEN",
        "password: ********",
        "password: changeme",
        "db_password = 'changeme'",
        'token: "{{ secrets.DEPLOY_TOKEN }}"',
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        'export OPENAI_API_KEY="sk-..."',
        f"Using key {SK}proj-****gH3k from the keychain",
        f"token {GH}o_**** expired",
        "api_key = [REDACTED]",
        f"{GH}p_" + "x" * 36,
        f"{SK}" + "x" * 48,
        "aws_access_key_id = AKIA" + "IOSFODNN7" + "EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
        "DATABASE_URL=postgres://user:password@localhost:5432/app",
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
        "REDIS_URL=redis://localhost:6379/0",
        "mysql://root@localhost/shop",
        f"The sample token from the docs: {example_jwt}",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        'WWW-Authenticate: Bearer realm="api", error="invalid_token"',
        "Use the Bearer authentication scheme for every request.",
        "SLACK_BOT_TOKEN=xo" + "xb-your-token",
        "password: str",
        "password: Optional[str] = None",
        "def login(username: str, password: str) -> Token:",
        'password = os.environ["DB_PASSWORD"]',
        'token = request.headers.get("Authorization")',
        "api_key = settings.OPENAI_API_KEY",
        "secret = generate_secret()",
        "token = tokens[0]",
        "if password == confirm_password:",
        "self.password = password",
        "password=None,",
        "user = User(email=email, password=hashed_password)",
        "const token = await getToken();",
        "api_key: str = Field(..., description='The API key')",
        "password: !vault |",
        "password: ENC[AES256_GCM,data:abc,iv:def,tag:ghi,type:str]",
        # descriptive keys, counts
        "max_tokens: 4096",
        '{"token_count": 1532, "input_tokens": 100, "output_tokens": 42}',
        "secret_name: prod-database",
        "token_url: https://oauth2.googleapis.com/token",
        f"password_hash = {f.chars(60, B64)}",
        "forgot_password: true",
        "password_min_length: 12",
        "key = cache_key(user.id)",
        "for key, value in mapping.items():",
        "| keyboard | us |",
        "tokenizer: cl100k_base",
        "primary_key: id",
        "public_key: ~/.ssh/id_ed25519.pub",
        # hashes, ids, images, public material
        f"commit {sha}\nAuthor: Dev <dev@example.com>",
        f"$ git rev-parse HEAD\n{sha}",
        f"sha256:{f.chars(64, HEX)}",
        f'"integrity": "sha512-{f.chars(86, B64)}=="',
        f"{f.chars(32, HEX)}  dist/app.tar.gz",
        f"request_id={uuid} status=200",
        f'{{"id": "{uuid}", "object": "response"}}',
        f"metadata:\n  uid: {uuid}",
        f"Idempotency-Key: {uuid}",
        f"HEROKU_APP_ID={uuid}",
        f"data:image/png;base64,{image}",
        f'<img src="data:image/jpeg;base64,{image}">',
        f"ssh-rsa AAAAB3NzaC1yc2E{pub} dev@laptop",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{f.chars(43, B64)} ci",
        f"-----BEGIN PUBLIC KEY-----\n{pub[:64]}\n{pub[64:128]}\n-----END PUBLIC KEY-----",
        f"Fingerprint: SHA256:{f.chars(43, B64)}",
        # prose and logs with the key words
        "The author reindexed the auth tables; pass the key to the compass service.",
        "tests/test_auth.py::test_token_refresh PASSED [ 42%]",
        "Tokens used: 1234 (input 1000, output 234)",
        "token_usage={'input_tokens': 100, 'output_tokens': 5}",
        "KeyError: 'token'",
        "https://github.com/org/repo/commit/" + sha,
        "http://localhost:8080/api/v1/users?page=2",
        "ssh://git@github.com:22/org/repo.git",
        "https://user@host.example.com/path",
        "The password must be at least 12 characters.",
        '{"password": "Enter your password", "password_hint": "At least 12 characters"}',
        "curl -u $USER:$TOKEN https://api.example.com",
        "ps -u root:root",
        "Set the API key in your environment before running the tool.",
        "risk-management-framework-v2-final-draft-2026",
        "task-1234567890-abcdefghijklmnop",
        # near misses of the issue-15 detectors: ports, flags, ids, masks, fields, prose
        "mkdir -p build/output && psql -h db -p 5432 -U app",
        "ssh -p 2222 deploy@host.example.com",
        "docker run -p 8080:80 -e LOG_LEVEL=info nginx",
        "http://localhost:8080/search?email=dev@example.com",
        "git clone git@github.com:org/repo.git",
        "https://registry.example.com/v2/org/app/manifests/sha256:" + f.chars(64, HEX),
        f"https://{f.chars(16, string.ascii_lowercase)}@example.com/path",
        "env:\n  - name: LOG_LEVEL\n    value: info\n  - name: DB_HOST\n    value: db.internal",
        '{"key": "region", "value": "eu-west-1"}',
        '<add key="LogLevel" value="Verbose" />',
        '{"name": "Content-Type", "value": "application/json"}',
        "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db, key: password}",
        f"AccessorID: {uuid}",
        f"SecretName: prod-db {uuid}",
        'session.auth = ("user", "password")',
        "auth=(username, password)",
        "The token refresh failed; rotate the key and retry the password reset flow.",
        "the key is stored in the vault, see docs/secrets/rotation-policy-2026.md",
        f"token usage {f.rng.randint(1, 9999)} of 100000 for model claude-sonnet-4-5",
        "gl" + "pat-" + "x" * 20,
        "sk" + "_live_" + "*" * 24,
        "np" + "m_" + "<your-token>",
        "h" + "f_" + "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "export STRIPE_KEY=" + "sk" + "_test_" + "EXAMPLE" + "x" * 17,
        f"dapi-client v{f.rng.randint(1, 9)}.{f.rng.randint(0, 9)} installed",
        f"SKU {f.chars(8, HEX)} in stock",
        f"commit message: fix: key-{f.chars(6, string.ascii_lowercase)} typo",
        "machine api.example.com\n  login deploy\n  password ${NETRC_PASSWORD}",
        f"users:\n- user:\n    client-certificate: ~/.kube/{f.chars(8, HEX)}.crt",
        "redis-cli -h cache -p 6380 ping",
        "mysql -u root -p shop < dump.sql",
        # A signature only in an Azure SAS query (`sv=` first), and not a placeholder one.
        f"https://cdn.example.com/img/{sha[:8]}.png?w=640&sig={f.chars(30)}",
        "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig=<sas-signature>",
        "pip install mysql-connector  # in /venv/lib/python3.11/site-packages/mysql",
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hard_negatives_stay_byte_identical(seed: int) -> None:
    negatives = hard_negatives(Fake(seed))
    changed = [(doc, find(doc)) for doc in negatives if redact(doc) != doc]
    assert len(negatives) >= 80
    assert len(changed) / len(negatives) <= 0.02, changed


def test_hard_negatives_none_changed() -> None:
    """Stricter than the 2 % target on our own corpus: every hard negative is untouched."""
    for doc in hard_negatives(Fake(11)):
        assert redact(doc) == doc, find(doc)


# -- specific behaviour ------------------------------------------------------------------------


def test_replacement_keeps_the_type_visible() -> None:
    token = Fake(1).github()
    out, redactions = scrub(f"token={token}")
    assert out == "token=[REDACTED:github_token]"
    assert redactions == [
        {
            "type": "github_token",
            "position": (6, 6 + len(token)),
            "replacement": "[REDACTED:github_token]",
        }
    ]


def test_positions_refer_to_the_input() -> None:
    f = Fake(2)
    doc = f"a={f.github()} b\npassword: {f.password()}\nurl=postgres://u:{f.chars(12)}@h/db"
    out, redactions = scrub(doc)
    rebuilt, cursor = [], 0
    for r in redactions:
        start, end = r["position"]
        rebuilt += [doc[cursor:start], r["replacement"]]
        cursor = end
    assert "".join([*rebuilt, doc[cursor:]]) == out
    assert [r["type"] for r in redactions] == ["github_token", "password", "postgres_url"]


def test_scrub_is_idempotent_on_the_corpus() -> None:
    for case in positives(Fake(5)):
        once = redact(case.doc)
        assert redact(once) == once, case.name


def test_non_ascii_text_keeps_positions() -> None:
    token = Fake(3).github()
    doc = f"İstanbul — ünïcödé ✓ {token} end"
    out, redactions = scrub(doc)
    (r,) = redactions
    assert doc[r["position"][0] : r["position"][1]] == token
    assert out == "İstanbul — ünïcödé ✓ [REDACTED:github_token] end"


def test_secret_inside_a_longer_word_is_not_a_token() -> None:
    body = Fake(4).chars(36)
    assert redact(f"xgh{'p'}_{body}") == f"xgh{'p'}_{body}"


def test_overlapping_rules_merge_into_the_most_specific_type() -> None:
    token = Fake(5).github()
    out, redactions = scrub(f'{{"api_key": "{token}"}}')
    assert [r["type"] for r in redactions] == ["github_token"]
    assert token not in out


def test_empty_and_clean_text() -> None:
    assert scrub("") == ("", [])
    assert scrub("nothing to see here\n") == ("nothing to see here\n", [])


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DB_PASSWORD", "password"),
        ("dbPassword", "password"),
        ("pgpassword", "password"),
        ("apiKey", "api_key"),
        ("x-api-key", "api_key"),
        ("API_KEY", "api_key"),
        ("client_secret", "secret"),
        ("GITHUB_TOKEN", "token"),
        ("accessToken", "token"),
        ("aws_secret_access_key", "aws_secret_access_key"),
        ("SecretAccessKey", "aws_secret_access_key"),
        ("signing_key", "secret"),
        ("max_tokens", None),
        ("token_count", None),
        ("secret_name", None),
        ("password_hash", None),
        ("keyboard", None),
        ("monkey", None),
        ("primary_key", None),
        ("token_url", None),
        ("compass", None),
        ("tokenizer", None),
        ("is_secret", None),
    ],
)
def test_classify_key(name: str, kind: str | None) -> None:
    assert classify_key(name) == kind


@pytest.mark.parametrize(
    "value",
    ["<your-key>", "${TOKEN}", "********", "changeme", "xxxxxxxxxxxx", "12345678", "[REDACTED:x]"],
)
def test_placeholders(value: str) -> None:
    assert is_placeholder(value)


def test_scrub_imports_only_the_standard_library() -> None:
    import sys

    own = {name for name in sys.modules if name.startswith("ctxward")}
    assert scrub_module.__name__ in own
    from pathlib import Path

    # The modules scrubbing loads (and nothing else of ours): `userrules`, which checks the
    # config's extra rules, is imported only by `configure`.
    folder = Path(scrub_module.__file__).parent
    loaded = ("__init__", "engine", "rules", "tokens", "assignments", "context", "providers")
    for name in loaded:
        source = (folder / f"{name}.py").read_text(encoding="utf-8")
        imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
        assert all(
            line.split()[1].split(".")[0]
            in {
                "__future__",
                "base64",
                "functools",
                "json",
                "math",
                "re",
                "sys",
                "collections",
                "dataclasses",
                "typing",
            }
            or line.split()[1].removesuffix(".") in {f"ctxward.core.scrub.{m}" for m in loaded}
            for line in imports
        ), (name, imports)


def test_a_fresh_interpreter_scrubbing_loads_only_the_standard_library() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from ctxward.core.scrub import scrub\n"
        "scrub('token: ' + 'aB3' * 10 + ' https://u:p4ssw0rd!@h/x')\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    loaded = done.stdout.split()
    foreign = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and name
        not in (
            "ctxward",
            "ctxward.core",
            "ctxward.core.scrub",
            *(
                f"ctxward.core.scrub.{m}"
                for m in ("engine", "rules", "tokens", "assignments", "context", "providers")
            ),
        )
    ]
    assert not foreign, foreign


# -- linear time -------------------------------------------------------------------------------

# What the scrubber's speed is measured against: technical prose with the key words and flags
# an agent's text has, and no secret.
PROSE = (
    "The build failed on the token refresh test; I fixed the key rotation and re-ran pytest -q "
    "--maxfail=1 with the cache cleared. See https://example.com/docs/auth for the password "
    "policy and the api key scopes. Next: update the config loader, keep the secret manager "
    "mocked, and run `git log --oneline -5` before the review.\n"
)
# Repeated to 1 MB, each of these cost a rule far more than prose: `eyJ` took the JWT rule 15 s
# (it ran through 8 KB of header from every `eyJ`), a run of dashes the flag rule 1.5 s; the
# others are each rule's own prefix and alphabet, and the shapes that make it backtrack.
ADVERSARIAL = [
    "eyJ",
    "eyJ" * 4 + ".",
    "eyJ" + "a" * 40 + ".",
    "-",
    "-" * 90 + " ",
    "--passpass",
    "pass",
    "password=",
    'token="',
    "secret: ",
    "x" * 60 + "token: ",
    "-u=",
    "heroku",
    "://:",
    "://" + "a" * 300 + ":",
    "BEGIN " + "-" * 30,
    "-----BEGIN " + PEM_RSA + "-----\n",
    "PuTTY-User-Key-File-2: x\n",
    "AKIA",
    " ",
    "bearer ",
    "authorization: basic ",
    "machine ",
    "<pass>",
    "sk-" + "eyJ" * 7 + ":",
    # the issue's shapes for the rules it added: `=`, quotes, base64 runs, the gates' separators
    "=",
    '"',
    "'",
    '\\"',
    "A" * 63 + "/",
    "LS0tLS1CRUdJTi" + "A" * 40,
    "_A",
    "-A1",
    ".Ab",
    "_" + "a" * 15 + "B",
    "gl" + "pat-" + "a" * 30,
    "value: ",
    '{"key": "token", "value": ',
    "- name: password\n  value: ",
    "machine h\n login u\n",
    "auth=('",
    "mysql -p",
    " -p ",
    "token ",
    "://" + "a" * 20 + "@",
    "://u:p@",
    "secretid: ",
    "x-consul-token: ",
]


def repeated(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def cpu_seconds(text: str, runs: int = 1) -> float:
    """The fastest of `runs` scrubs of `text`, in CPU time (other processes do not count)."""
    import time

    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        scrub(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.fixture(scope="module")
def prose_seconds() -> float:
    return cpu_seconds(repeated(PROSE, 1_000_000), runs=3)


@pytest.mark.slow  # 1 MB per rule and unit
@pytest.mark.parametrize("unit", ADVERSARIAL, ids=repr)
def test_adversarial_repeats_scrub_in_linear_time(unit: str, prose_seconds: float) -> None:
    """Ten times the text takes about ten times as long (a quadratic rule: a hundred), and a
    megabyte of it costs a bounded multiple of a megabyte of prose."""
    small = cpu_seconds(repeated(unit, 100_000), runs=3)
    large = cpu_seconds(repeated(unit, 1_000_000), runs=2)  # best of two: one can catch a stall

    assert large <= 20 * max(small, prose_seconds / 10), (small, large)
    assert large <= 100 * prose_seconds, (large, prose_seconds)


_FILLERS = ["a", "A", "0", "-", "_", ".", " ", "=", ":", '"', "'", "/", "@", "\\", "Ab1", "eyJ"]
_TAILS = ["", "=", ":", " ", '"', "@", ".", '="', "\n"]
# The rules without an anchor, and what their matches start with (the provider table: one
# prefix of each shape, and the gates' own separators).
_STARTS = {
    "slack_token": ("xoxb-",),
    "aws_access_key_id": ("AKIA",),
    "providers": ("glpat-", "SG.", "sk_live_", "M", "AGE-SECRET-KEY-1", "_A", "-A", ".A"),
}
# Rules whose anchor is not where their matches start (the JWT's is the dot before its payload).
_STARTS_TOO = {"jwt": ("eyJ",)}


@pytest.mark.slow
@pytest.mark.parametrize("rule", scrub_module.RULES, ids=lambda rule: rule.name)
def test_every_rule_is_linear_on_repeats_of_its_own_prefix(
    rule: scrub_rules.Rule, prose_seconds: float
) -> None:
    """Each rule, alone, on the worst of ~500 repeated units built from its anchor, a run of one
    character class and a terminator: that unit at 100 KB and at 1 MB."""
    import time

    def cost(text: str, runs: int = 1) -> float:
        lowered = text.lower()
        best = float("inf")
        for _ in range(runs):
            start = time.process_time()
            list(rule.find(text, lowered))
            best = min(best, time.process_time() - start)
        return best

    starts = (rule.anchor, *_STARTS_TOO.get(rule.name, ())) if rule.anchor else _STARTS[rule.name]
    units = [
        start + filler * count + tail
        for start in starts
        for filler in _FILLERS
        for count in (0, 1, 7, 45, 100)
        for tail in _TAILS
    ]
    worst = max(units, key=lambda unit: cost(repeated(unit, 20_000)))
    small = cost(repeated(worst, 100_000), runs=3)
    large = cost(repeated(worst, 1_000_000), runs=2)  # best of two: one run can catch a stall

    assert large <= 20 * max(small, prose_seconds / 10), (worst, small, large)
    assert large <= 150 * prose_seconds, (worst, large, prose_seconds)


_LONG_PIECES = [
    *("eyJ", ".", "eyJhbGciOiJIUzI1", "a" * 8, "-", "_", " ", "=", "x"),
    *("a" * 4000, "b" * 4092, "-" * 40, "-" * 93, "-" * 200, "--", "pass", "token"),
    *("credential", "key", '"', "\\", "\t", "\n", "A1b2C3d4E5f6G7h8"),
]


@pytest.mark.slow  # 300 examples
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_LONG_PIECES), max_size=12))
def test_the_linear_finders_find_what_the_regex_finds(pieces: list[str]) -> None:
    """`jwt_matches` and `flag_matches` skip the starts that cannot match: the redactions are
    those of every rule's plain `finditer` (`_every_rule`), long runs and length caps included."""
    text = "".join(pieces)
    assert find(text) == _every_rule(text)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from([*_LONG_PIECES, "a" * 39, "-" * 41, "s", "pw"]), max_size=10)
)
def test_the_flag_rules_dash_guard_changes_no_match(pieces: list[str]) -> None:
    """`CLI_FLAG`'s lookahead only turns away starts the key word search fails on anyway."""
    guarded = scrub_assignments.CLI_FLAG
    plain = guarded.replace("(?![-0-9_bd-jlmnoq-ru-z]{41})", "", 1)
    assert plain != guarded
    text = "".join(pieces).lower()
    found = [(m.span(), m.groupdict()) for m in re.finditer(guarded, text)]
    assert found == [(m.span(), m.groupdict()) for m in re.finditer(plain, text)]


_REFUSED_VALUES = [
    "${DB_PASSWORD}",
    "${DB_PASSWORD:-}",
    "$(cat /run/secrets/db)",
    "********",
    "get_token()",
    "vault.read(path)",
    'os.environ["DB_PASSWORD"]',
    "tokens[key]",
]


@pytest.mark.parametrize("value", _REFUSED_VALUES)
@pytest.mark.parametrize(
    "form",
    [
        "password: {v}",
        "    client_secret = {v}",
        "export API_TOKEN={v}",
        "db_password={v},",
        "deploy --password {v} --force",
        "<password>{v}</password>",
        '{{"api_key": {v}}}',
    ],
)
def test_a_key_word_before_a_reference_a_mask_or_a_call_redacts_nothing(
    form: str, value: str
) -> None:
    """Such a value is refused wherever it stands (`assignments._REFUSED`, matched in the regex
    and skipped before any vetting): at a line's start, after `export`, in code or in a flag."""
    text = form.format(v=value)
    assert find(text) == []


_VALUE_PIECES = [
    *("password", "api_key", "token", "--secret", "<password>", "</password>", ": ", "=", " "),
    *("$", "{", "(", "[", "}", ")", "]", "*", "**", "get_", "os.environ", ".", "_", "-", '"', "'"),
    *("x", "Ab3", "9", "\n", "\\", "\u212a", "\n", ",", ";", "`", "</"),
]


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(_VALUE_PIECES), max_size=14))
def test_a_refused_value_takes_the_span_a_bare_one_would(pieces: list[str]) -> None:
    """`refused` only names some of `bare`'s values: with it, every key-word rule matches the
    same spans as without it, so a refused value still ends its match where it did before."""
    text = "".join(pieces).lower()
    patterns = [*scrub_assignments.GENERIC, scrub_assignments.CLI_FLAG, scrub_assignments.XML]
    for pattern in patterns:
        plain = pattern.replace(scrub_assignments._REFUSED, "(?!)")  # never refused
        assert plain != pattern
        found = [m.span() for m in re.finditer(pattern, text)]
        assert found == [m.span() for m in re.finditer(plain, text)]


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("max_tokens", False),
        ("MAX_TOKENS", False),
        ("usage.Tokens", False),
        ("db-secret-name", False),
        ("secret_toKens", True),  # `to`, `Kens`: the last word is not `tokens`
        ("secret_tokenS", True),  # `token`, `S`
        ("SECRET_\u212aEYS", True),  # the Kelvin sign starts no word of the key
        ("api_token", True),
    ],
)
def test_a_key_whose_last_word_describes_a_credential_names_none(key: str, named: bool) -> None:
    value = Fake(5).token()
    assert (value not in redact(f'{key}: "{value}"')) is named


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from([*_VALUE_PIECES, "\\", "]", "`", "\t", ":="]), max_size=14))
def test_the_separator_lookahead_changes_no_match(pieces: list[str]) -> None:
    """`_SEPARATOR_AHEAD` only turns away the places where no separator could match."""
    text = "".join(pieces).lower()
    for pattern in scrub_assignments.GENERIC:
        plain = pattern.replace(scrub_assignments._SEPARATOR_AHEAD, "", 1)
        assert plain != pattern
        found = [(m.span(), m.lastgroup) for m in re.finditer(pattern, text)]
        assert found == [(m.span(), m.lastgroup) for m in re.finditer(plain, text)]


def test_a_flag_inside_a_word_or_a_flag_as_a_value_is_not_a_password() -> None:
    fake = Fake(11)
    password = fake.password()
    # `-packages/mysql` on a line that names mysql: a word's inside, not `-p`.
    assert find("pip install mysql-connector  # in /venv/lib/python3.11/site-packages/mysql") == []
    # The first flag's value would be the second flag: the second one's value is the password.
    text = f"redis-server --requirepass --requirepass {password} --port 6380"
    assert (
        redact(text) == "redis-server --requirepass --requirepass [REDACTED:password] --port 6380"
    )


@pytest.mark.parametrize("header", [8, 8189, 8190, 8191, 8192, 8193, 8200])
@pytest.mark.parametrize("before", ["", "eyJ", "eyJeyJ", "x", "eyJ" + "c" * 9000])
def test_the_jwt_finder_keeps_the_header_cap(header: int, before: str) -> None:
    pattern = re.compile(scrub_tokens.JWT)
    text = before + "eyJ" + "a" * header + ".eyJ" + "b" * 20 + ".sig"
    found = [m.span() for m in scrub_tokens.jwt_matches(pattern, text)]
    assert found == [m.span() for m in pattern.finditer(text)]


# -- properties --------------------------------------------------------------------------------

SECRET_MAKERS: list[Callable[[Fake], tuple[str, str]]] = [
    lambda f: (t := f.github(), t),
    lambda f: (t := f.openai_project(), t),
    lambda f: (t := f.anthropic(), t),
    lambda f: (t := f.jwt(), t),
    lambda f: (t := f.google(), t),
    lambda f: (t := f.slack(), t),
    lambda f: (f"AWS key {(t := f.aws_id())}", t),
    lambda f: (f"password: {(t := f.password())}", t),
    lambda f: (f"api_key={(t := f.token())}", t),
    lambda f: (f"postgres://app:{(t := f.chars(18))}@db/app", t),
    lambda f: (t := f.pem(PEM_RSA, 3), t),
    lambda f: (f"Authorization: Bearer {(t := f.token(40))}", t),
]

surrounding = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFF), max_size=60
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=surrounding,
    after=surrounding,
    maker=st.sampled_from(range(len(SECRET_MAKERS))),
    seed=st.integers(0, 2**32),
)
def test_scrub_never_lets_a_secret_back(before: str, after: str, maker: int, seed: int) -> None:
    doc_part, secret = SECRET_MAKERS[maker](Fake(seed))
    doc = f"{before}\n{doc_part}\n{after}"
    out, _ = scrub(doc)
    assert secret not in out
    leaked = [w for w in _fragments(secret, before + after) if w in out]
    assert not leaked, (doc, out)
    assert redact(out) == out  # and scrubbing again changes nothing


@pytest.mark.slow  # 400 examples
@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=400) | st.from_regex(r"(\w{0,12}[:=] ?[\w/+=.-]{0,40}\s){0,6}"))
def test_positions_are_consistent(text: str) -> None:
    out, redactions = scrub(text)
    cursor = 0
    rebuilt = []
    for r in redactions:
        start, end = r["position"]
        assert cursor <= start < end <= len(text)
        assert r["replacement"] == f"[REDACTED:{r['type']}]"
        assert r["type"] in SECRET_TYPES
        rebuilt += [text[cursor:start], r["replacement"]]
        cursor = end
    assert "".join([*rebuilt, text[cursor:]]) == out
    assert redact(out) == out


# Every mark, each cut short by its last character, and filler: values that hold a mark and
# values that only almost do.
_MARK_PIECES = [*scrub_rules._MARKS, *(mark[:-1] for mark in scrub_rules._MARKS), "Z9", " ", "_"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_MARK_PIECES), max_size=6))
def test_the_grouped_mark_regex_finds_a_mark_exactly_when_one_is_in_the_value(
    pieces: list[str],
) -> None:
    value = "".join(pieces)
    found = scrub_rules.regex(scrub_rules._MARK).search(value) is not None
    assert found == any(mark in value for mark in scrub_rules._MARKS)


def test_a_random_token_cannot_spell_a_placeholder_by_chance() -> None:
    """Regression (found by the property test): `yOUr` inside a long random key is not `your`."""
    body = "STnlXQDiB7E_fSOfZFYyoUr_oA8K4_arEjpdulX2TUSIqxKDdL-QaUqePI7q7p5aPCfuqK05sc"
    token = (
        f"{SK}proj-{body}T3Blbk" + "FJxh-jpQg3XUqkgAmMvnyIFHON5LVF0kDSO16tvkpO2pALJdgGL8JdA1JIlQ"
    )
    assert redact(token) == "[REDACTED:openai_key]"
    assert is_placeholder(f"{SK}your-key-here")
    assert is_placeholder("YOUR_API_KEY")
    assert not is_placeholder(body)


# -- lazy rules: the anchors gate the table ------------------------------------------------------


def _every_rule(text: str) -> list[scrub_engine.Redaction]:
    """`find` without the anchor test, the provider gates, `Rule.defers` or the refusal before
    vetting: every rule runs its regex over the text and vets every match, a value the key-word
    rules refuse at once (`assignments._REFUSED`) as any other."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = text.translate(scrub_rules.ASCII_LOWER)
    spans = [
        span
        for rule in scrub_module.RULES
        for match in _matches(rule, lowered if rule.on_lowered else text)
        for span in rule.vet(match, text, lowered)
    ]
    if spans:
        spans += scrub_engine._repeats(text, spans)
    return scrub_engine._merge(spans)


def _matches(rule: scrub_rules.Rule, haystack: str) -> list[re.Match[str]]:
    """Every match of the rule's regex; for the provider table (matched only where a token
    starts, never searched), its match at every start of a token, with no gate."""
    if rule.name != "providers":
        return list(re.finditer(rule.pattern.replace(scrub_assignments._REFUSED, "(?!)"), haystack))
    pattern = re.compile(rule.pattern)
    found: list[re.Match[str]] = []
    at = 0
    while at < len(haystack):
        match = pattern.match(haystack, at)
        if match is not None:
            found.append(match)
            at = match.end()
        else:
            at += 1
    return found


def _corpus() -> list[str]:
    docs = []
    for seed in (1, 2, 3):
        for case in positives(Fake(seed)):
            docs += [wrap(case.doc) for wrap in WRAPPERS.values()]
        docs += hard_negatives(Fake(seed))
        docs.append(f"DB_PWD={Fake(seed).password()}")  # the rules no corpus case needs
    return [*docs, basic_auth_case()[0]]


def test_anchors_that_start_alike_are_looked_for_in_one_scan() -> None:
    """`AIza` and `ATATT3` share a scan (`Rule.kin`): absent both, one search says so for both;
    with one of them there, each is still looked for on its own."""
    rules = {rule.name: rule for rule in scrub_module.RULES}
    google, atlassian = rules["google_api_key"], rules["atlassian_token"]
    assert google.kin is not None and google.kin == atlassian.kin
    present: dict[tuple[str, bool], bool] = {}
    assert not google._anchored("plain words only", present)
    assert present[(google.kin, False)] is False
    assert not atlassian._anchored("plain words only", present)
    present = {}
    text = "a token: " + "ATAT" + "T3" + "x" * 20
    assert not google._anchored(text, present)
    assert atlassian._anchored(text, present)


def test_a_one_character_anchor_keeps_its_own_scan() -> None:
    """A kin scan looks for anchors of two characters or more: `-` is not one of `-u`'s kin,
    and the rule it anchors is not skipped when `-u` and `-x` are absent."""

    def rule(name: str, anchor: str) -> scrub_rules.Rule:
        return scrub_rules.Rule(name, re.escape(anchor), False, lambda m, t, lowered: (), anchor)

    table = (rule("dash", "-"), rule("u", "-u"), rule("x", "-x"))
    scrub_rules.link_parts(table)
    assert table[0].kin is None
    assert table[1].kin is not None and table[1].kin == table[2].kin
    present: dict[tuple[str, bool], bool] = {}
    assert not table[1]._anchored("a - b", present)
    assert table[0]._anchored("a - b", present)


def test_every_match_of_a_rule_holds_one_of_its_anchors() -> None:
    matched = set()
    for doc in _corpus():
        lowered = doc.lower()
        for rule in scrub_module.RULES:
            haystack = lowered if rule.on_lowered else doc
            for match in re.finditer(rule.pattern, haystack):
                matched.add(rule.name)
                assert rule.anchor is None or rule.anchor in match.group(0), (rule, match)
    assert matched == {rule.name for rule in scrub_module.RULES}  # the corpus tries every rule


@pytest.mark.slow  # the whole corpus twice
def test_the_anchors_change_no_redaction_on_the_corpus() -> None:
    for doc in _corpus():
        assert find(doc) == _every_rule(doc), doc


_PIECES = [
    *{rule.anchor for rule in scrub_module.RULES if rule.anchor},
    *("ghp_", "xoxb-", "AKIA"),
    *("BEGIN RSA PRI" + "VATE KEY-----", "-----", "://u:", "@db", "Bearer ", "Authorization: "),
    *("=", ": ", ":= ", '"', "'", " ", "\n", "\\n", "_", ".", "x", "-"),
    *("Zq8vR2kLm9Tx4Wb7Nc3Pd6", "abcdefgh", "HUNTER22hunter", "A" * 16, "eyJhbGciOiJIUzI1"),
    *("${", "$(", "****", "}", ")", "(", "[", "get_token", "os.environ", "export ", "--password "),
]


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=30))
def test_the_anchors_change_no_redaction(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert find(text) == _every_rule(text)


def test_import_compiles_nothing_and_a_clean_text_only_the_anchors() -> None:
    import subprocess
    import sys

    probe = (
        "import json, re\n"
        "from ctxward.core import scrub\n"
        "from ctxward.core.scrub import rules\n"
        "at_import = rules.regex.cache_info().currsize\n"
        "compiled = []\n"
        "rules.regex = rules.functools.cache(lambda s: compiled.append(s) or re.compile(s))\n"
        "scrub.scrub('plain prose: nothing to redact here, only words.\\n' * 1000)\n"
        "names = [rule.name for rule in scrub.RULES if rule.pattern in compiled]\n"
        "print(json.dumps([at_import, names]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    # No anchor: the two rules below. The provider table (one alternation of 40 formats) waits for
    # a gate's candidate token, and plain prose has none.
    assert json.loads(done.stdout) == [0, ["slack_token", "aws_access_key_id"]]
