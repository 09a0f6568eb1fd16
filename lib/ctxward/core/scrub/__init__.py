"""Secret scrubbing: `scrub(text) -> (text, redactions)`, the project's one pattern table.

The public face of the package (what every writer and injector imports) is re-exported here;
the engine is standard library only, as every hook imports it.

One module per concern:

- `engine`: `scrub`, `redact`, `find`, `explain`, `configure`; the table (`RULES`), the second
  pass that removes every other occurrence of a value found (`_repeats`), overlaps merged;
- `rules`: the `Rule` type and what every rule's vetting shares (placeholders, masks, entropy);
- `tokens`: formats with a shape of their own (private keys, vendor tokens, JWTs, URLs with
  credentials, HTTP authorization);
- `assignments`: secrets named by their key (generic assignments, flags, XML, curl, .netrc);
- `providers`: provider token formats as data (prefix, type, pattern);
- `context`: the provider gate and the detectors that need context (name/value fields,
  base64-wrapped keys, UUID keys after a provider's CLI, bare tokens in prose, ...);
- `userrules`: the project's `scrub:` config section checked (allowlist, extra rules refused
  when unsafe).
"""

from __future__ import annotations

from ctxward.core.scrub.assignments import classify_key as classify_key
from ctxward.core.scrub.engine import REPLACEMENT as REPLACEMENT
from ctxward.core.scrub.engine import RULES as RULES
from ctxward.core.scrub.engine import SECRET_TYPES as SECRET_TYPES
from ctxward.core.scrub.engine import configure as configure
from ctxward.core.scrub.engine import explain as explain
from ctxward.core.scrub.engine import find as find
from ctxward.core.scrub.engine import redact as redact
from ctxward.core.scrub.engine import scrub as scrub
from ctxward.core.scrub.rules import is_placeholder as is_placeholder
from ctxward.core.scrub.rules import looks_random as looks_random
