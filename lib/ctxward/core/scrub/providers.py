"""Provider token formats for `ctxward.core.scrub`, as data: one row per format.

Each row: `(rule id, redaction type, pattern)`. The pattern is matched at the start of a token
(the scrubber's gate finds the candidates, see `scrub_gate`), so it needs no anchor or word
boundary of its own; every quantifier is bounded and every pattern ends with a boundary, so a
match costs at most its own length. The formats come from the providers' published token shapes;
gitleaks' rule set (config/gitleaks.toml, MIT, Copyright (c) 2019 Zachary Rice) and
detect-secrets' plugins were the references for which formats exist. Standard library only: this
is imported by the hooks' hot path.

Rows whose token has a separator (`_`, `-`, `.`) within its first 16 characters, followed by 16
token characters, are found by the gate; `UNSEPARATED` lists the few that have none, each with
the literal the scrubber looks for first.
"""

from __future__ import annotations

_B = r"(?![A-Za-z0-9_-])"  # the token ends here
_A = "A-Za-z0-9"

# (rule id, type, pattern); the first row that matches at a token's start wins.
PROVIDERS: tuple[tuple[str, str, str], ...] = (
    (
        "gitlab_token",
        "gitlab_token",
        r"gl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ffct|ft|agent|wt)-[" + _A + r"_.-]{20,160}" + _B,
    ),
    ("stripe_key", "stripe_key", r"(?:sk|rk)_(?:live|test)_[" + _A + r"]{16,247}" + _B),
    ("stripe_webhook", "stripe_key", r"whsec_[" + _A + r"]{24,64}" + _B),
    ("npm_token", "npm_token", r"npm_[" + _A + r"]{36}" + _B),
    ("huggingface_token", "huggingface_token", r"(?:hf|api_org)_[" + _A + r"]{30,40}" + _B),
    ("sendgrid_key", "sendgrid_key", r"SG\.[" + _A + r"_-]{16,32}\.[" + _A + r"_-]{30,64}" + _B),
    ("digitalocean_token", "digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}" + _B),
    ("shopify_token", "shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _B),
    ("pypi_token", "pypi_token", r"pypi-Ag[" + _A + r"_-]{50,1024}" + _B),
    (
        "discord_bot_token",
        "discord_token",
        r"[MNO][" + _A + r"_-]{23,27}\.[" + _A + r"_-]{6}\.[" + _A + r"_-]{27,40}" + _B,
    ),
    ("linear_api_key", "linear_key", r"lin_(?:api|oauth)_[" + _A + r"]{40}" + _B),
    ("postman_api_key", "postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _B),
    (
        "grafana_token",
        "grafana_token",
        r"(?:glsa_[" + _A + r"]{32}_[a-fA-F0-9]{8}|glc_[" + _A + r"+/]{32,400}={0,2})" + _B,
    ),
    ("vault_token", "vault_token", r"hv[sbr]\.[" + _A + r"_-]{24,200}" + _B),
    ("supabase_token", "supabase_token", r"sbp_[a-f0-9]{40}" + _B),
    ("figma_token", "figma_token", r"figd_[" + _A + r"_-]{40,43}" + _B),
    ("replicate_token", "replicate_token", r"r8_[" + _A + r"]{37}" + _B),
    ("groq_key", "groq_key", r"gsk_[" + _A + r"]{52}" + _B),
    ("xai_key", "xai_key", r"xai-[" + _A + r"]{80}" + _B),
    ("perplexity_key", "perplexity_key", r"pplx-[" + _A + r"]{48}" + _B),
    (
        "tailscale_key",
        "tailscale_key",
        r"tskey-(?:api|auth|client|webhook|scim)-[" + _A + r"]{6,24}-[" + _A + r"]{16,64}" + _B,
    ),
    ("buildkite_token", "buildkite_token", r"bkua_[a-f0-9]{40}" + _B),
    ("age_secret_key", "age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("newrelic_key", "newrelic_key", r"NR(?:AK|II|JS)-[" + _A + r"]{19,32}" + _B),
    ("sentry_token", "sentry_token", r"sntry[su]_[" + _A + r"_=+/-]{40,400}" + _B),
    (
        "doppler_token",
        "doppler_token",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[" + _A + r"]{40,44}" + _B,
    ),
    ("notion_token", "notion_token", r"ntn_[" + _A + r"]{40,50}" + _B),
    ("mailgun_key", "mailgun_key", r"key-[a-f0-9]{32}" + _B),
    ("square_token", "square_token", r"sq0(?:atp|csp)-[" + _A + r"_-]{22,43}" + _B),
    ("onepassword_token", "onepassword_token", r"ops_eyJ[" + _A + r"_-]{100,4096}={0,2}" + _B),
    ("pulumi_token", "pulumi_token", r"pul-[a-f0-9]{40}" + _B),
    ("docker_hub_token", "docker_hub_token", r"dckr_(?:pat|oat)_[" + _A + r"_-]{20,60}" + _B),
    ("airtable_token", "airtable_token", r"pat[" + _A + r"]{14}\.[a-f0-9]{64}" + _B),
    ("langsmith_key", "langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _B),
    ("pinecone_key", "pinecone_key", r"pcsk_[" + _A + r"]{4,8}_[" + _A + r"]{40,100}" + _B),
    ("tavily_key", "tavily_key", r"tvly-(?:dev-|prod-)?[" + _A + r"]{32}" + _B),
    (
        "terraform_cloud_token",
        "terraform_cloud_token",
        r"[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70}" + _B,
    ),
    (
        "sourcegraph_token",
        "sourcegraph_token",
        r"sgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}" + _B,
    ),
    # Secret tokens only: `pk.` ones are public by design, made to sit in a web page.
    (
        "mapbox_secret_token",
        "mapbox_token",
        r"sk\.eyJ1[" + _A + r"_-]{19,512}\.[" + _A + r"_-]{22,128}" + _B,
    ),
)

# Formats with no separator early on: (literal looked for first, rule id, type, pattern). These
# are searched for, not matched at a gate's start: each pattern starts with its literal (so the
# regex engine skips to it) and the scrubber checks the character before a match.
UNSEPARATED: tuple[tuple[str, str, str, str], ...] = (
    ("SK", "twilio_api_key", "twilio_key", r"SK[0-9a-f]{32}" + _B),
    (
        "dapi",
        "databricks_token",
        "databricks_token",
        r"dapi[a-f0-9]{32}(?:-\d)?" + _B,
    ),
    (
        "ATATT3",
        "atlassian_token",
        "atlassian_token",
        r"ATATT3[" + _A + r"_=-]{150,220}(?![A-Za-z0-9_=-])",
    ),
    # AccountKey= and SharedAccessKey= (Azure connection strings): one scan for `Key=`, the
    # scrubber checks the word before it.
    (
        "Key=",
        "azure_storage_key",
        "azure_storage_key",
        r"Key=(?P<value>[A-Za-z0-9+/]{40,100}={0,2})",
    ),
)

# What each new type is, for `SECRET_TYPES` (the most specific types come first there).
TYPES: dict[str, str] = {
    "gitlab_token": "GitLab token (glpat-, gldt-, glrt-, …)",
    "stripe_key": "Stripe secret or restricted key (sk_live_, rk_live_, sk_test_, whsec_)",
    "npm_token": "npm access token (npm_…)",
    "huggingface_token": "Hugging Face token (hf_…)",
    "sendgrid_key": "SendGrid API key (SG.….…)",
    "digitalocean_token": "DigitalOcean token (dop_v1_…)",
    "shopify_token": "Shopify access token (shpat_…)",
    "pypi_token": "PyPI upload token (pypi-Ag…)",
    "discord_token": "Discord bot token",
    "linear_key": "Linear API key (lin_api_…)",
    "postman_key": "Postman API key (PMAK-…)",
    "grafana_token": "Grafana service-account or cloud token (glsa_, glc_)",
    "vault_token": "HashiCorp Vault token (hvs.…)",
    "supabase_token": "Supabase access token (sbp_…)",
    "figma_token": "Figma personal access token (figd_…)",
    "replicate_token": "Replicate API token (r8_…)",
    "groq_key": "Groq API key (gsk_…)",
    "xai_key": "xAI API key (xai-…)",
    "perplexity_key": "Perplexity API key (pplx-…)",
    "tailscale_key": "Tailscale key (tskey-…)",
    "buildkite_token": "Buildkite API token (bkua_…)",
    "age_secret_key": "age secret key (AGE-SECRET-KEY-1…)",
    "newrelic_key": "New Relic key (NRAK-…)",
    "sentry_token": "Sentry auth token (sntrys_…)",
    "doppler_token": "Doppler token (dp.pt.…)",
    "atlassian_token": "Atlassian API token (ATATT3…)",
    "notion_token": "Notion integration token (ntn_…)",
    "mailgun_key": "Mailgun API key (key-…)",
    "square_token": "Square access token (sq0atp-…)",
    "onepassword_token": "1Password service-account token (ops_…)",
    "pulumi_token": "Pulumi access token (pul-…)",
    "docker_hub_token": "Docker Hub personal or organization access token (dckr_pat_…)",
    "airtable_token": "Airtable personal access token (pat….…)",
    "mapbox_token": "Mapbox secret access token (sk.eyJ1…)",
    "langsmith_key": "LangSmith API key (lsv2_pt_…, lsv2_sk_…)",
    "pinecone_key": "Pinecone API key (pcsk_…)",
    "tavily_key": "Tavily API key (tvly-…)",
    "terraform_cloud_token": "Terraform Cloud / HCP Terraform token (….atlasv1.…)",
    "sourcegraph_token": "Sourcegraph access token (sgp_…)",
    "telegram_bot_token": "Telegram bot token (the part after BOT_ID:)",
    "discord_webhook": "Discord webhook token (/api/webhooks/ID/TOKEN)",
    "twilio_key": "Twilio API key (SK…)",
    "databricks_token": "Databricks token (dapi…)",
    "azure_storage_key": "Azure storage account key (AccountKey=…)",
    "consul_token": "Consul / Nomad ACL SecretID",
    "url_token": "token as URL userinfo (scheme://TOKEN@host)",
    "azure_sas_token": "Azure shared access signature (sig= in a SAS URL or token)",
}
