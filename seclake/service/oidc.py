"""Sign-in with an organisation's identity provider (OpenID Connect).

The authorization code flow with PKCE, per provider of the settings
(``oidc_providers``; docs/sso.md):

1. ``start``: a fresh ``state``, ``nonce`` and PKCE verifier are kept here,
   server-side, for ``PENDING_SECONDS``; the browser is sent to the
   provider's authorization endpoint (read from its discovery document) and
   also gets the state in a cookie (api/sso.py), which binds the flow to the
   browser that started it (a callback URL sent to someone else is refused:
   login CSRF).
2. ``finish``: the callback's ``state`` is taken (single use) and must match
   the cookie's; the code is exchanged for tokens (with the verifier and the
   client's secret), and the ID token is validated: signature by a key of the
   provider's JWKS (refetched when a token names a key id not yet known: key
   rotation; at most once per ``JWKS_REFETCH_SECONDS``), issuer, audience (and
   ``azp`` when there are several), expiry and issue time within the
   provider's leeway, the nonce of this flow. The user is found or created,
   its roles and data policies set from the groups claim, and seclake's own
   session is opened (``Login.open``: the same session a password opens).
   The browser gets a one-time code, not the session token, in the URL's
   fragment.
3. ``session``: the sign-in page trades that code (single use, 60 s) for the
   session record, through the API (auth/ssoSession).

Authlib builds the authorization URL (PKCE S256) and makes the token
request; joserfc (Authlib's JOSE library) verifies the ID token. What is ours
is the policy: which claims name the user, how groups map to roles and data
policies, who may be created, and what is refused.

Pending flows and one-time codes live in this process's memory (bounded):
behind several API nodes, the start and the callback of a sign-in must reach
the same node (a sticky load balancer; docs/sso.md).
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import httpx
import requests
from authlib.integrations.requests_client import OAuth2Session
from cachetools import TTLCache
from joserfc import errors as jose_errors
from joserfc import jwt
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from seclake.db.models import User
from seclake.errors import Conflict, SeclakeError
from seclake.service.audit import Audit
from seclake.service.login import Login, SignIn
from seclake.service.metrics import Metrics
from seclake.service.users import EMAIL, USERNAME, Users
from seclake.settings import OidcProvider, Settings

log = logging.getLogger("seclake.oidc")

# A sign-in started and not finished within this is refused (the user starts again).
PENDING_SECONDS = 600
# The one-time code the sign-in page trades for the session.
HANDOFF_SECONDS = 60
# Flows in progress kept at once; past it the oldest go first (a flood of
# starts cannot grow memory; a real user caught by it starts again).
MAX_PENDING = 10_000
# Flows in progress one client address may hold: a flood from one address
# cannot push everyone else's out of the bound above.
MAX_PENDING_PER_CLIENT = 100
# The discovery document is read again after this.
METADATA_SECONDS = 3600
# A token naming an unknown key id refetches the JWKS at most this often per
# provider, so forged tokens cannot make seclake hammer the provider.
JWKS_REFETCH_SECONDS = 10
# Keys kept of a JWKS, and the largest discovery or JWKS document read.
MAX_KEYS = 100
MAX_DOCUMENT_BYTES = 1024 * 1024
HTTP_SECONDS = 10.0
# Asymmetric signatures only: never "none", and not HS256 (the client secret
# as a signing key would let anyone who holds it mint ID tokens).
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
MAX_GROUPS = 1000
MAX_NEXT = 2000


class SignInFailed(SeclakeError):
    """A sign-in refused; ``reason`` is the short label counted in /metrics."""

    code = "unauthorized"

    def __init__(self, reason: str, message: str, status: int = 401):
        super().__init__(message)
        self.reason = reason
        self.status = status


@dataclass
class Pending:
    provider: str
    nonce: str
    verifier: str
    redirect_uri: str
    next: str
    client: str = ""


@dataclass
class Handoff:
    signed_in: SignIn


@dataclass
class ProviderState:
    """What is read from one provider: its discovery document and keys."""

    config: OidcProvider
    discovered: dict[str, Any] | None = None
    discovered_at: float = 0.0
    keyset: KeySet | None = None
    keyset_at: float = -1e9
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _get_json(self, url: str, what: str) -> dict[str, Any]:
        config = self.config
        try:
            with httpx.Client(timeout=HTTP_SECONDS, follow_redirects=False) as client:
                with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
                    body = b""
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > MAX_DOCUMENT_BYTES:
                            raise SignInFailed("unreachable", f"{config.label}'s {what} is larger than {MAX_DOCUMENT_BYTES} bytes", 502)
            if response.status_code != 200:
                raise SignInFailed("unreachable", f"{config.label}'s {what} answered HTTP {response.status_code} ({url})", 502)
            document = httpx.Response(200, content=body).json()
        except httpx.HTTPError as e:
            raise SignInFailed("unreachable", f"identity provider {config.label} is unreachable ({url}): {type(e).__name__}", 502) from e
        except ValueError as e:
            raise SignInFailed("unreachable", f"{config.label}'s {what} is not JSON ({url})", 502) from e
        if not isinstance(document, dict):
            raise SignInFailed("unreachable", f"{config.label}'s {what} is not a JSON object ({url})", 502)
        return document

    def metadata(self) -> dict[str, Any]:
        """The discovery document, read again after ``METADATA_SECONDS``."""
        with self.lock:
            if self.discovered is not None and time.monotonic() - self.discovered_at < METADATA_SECONDS:
                return self.discovered
        config = self.config
        url = config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        metadata = self._get_json(url, "discovery document")
        # OpenID Connect Discovery 1.0, 4.3: the document must name the issuer configured.
        if metadata.get("issuer") != config.issuer:
            raise SignInFailed("discovery", f"{config.label}'s discovery document names issuer "
                               f"{str(metadata.get('issuer'))[:200]!r}, not {config.issuer!r} (setting issuer)", 502)
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(metadata.get(key), str) or not metadata[key].startswith(("https://", "http://")):
                raise SignInFailed("discovery", f"{config.label}'s discovery document has no {key}", 502)
        with self.lock:
            self.discovered, self.discovered_at = metadata, time.monotonic()
        return metadata

    def keys(self, kid: str | None = None) -> KeySet:
        """The provider's keys, refetched when ``kid`` is not among them (rotation)."""
        with self.lock:
            keys, fetched_at = self.keyset, self.keyset_at
        if keys is not None and (kid is None or _has_kid(keys, kid)):
            return keys
        if time.monotonic() - fetched_at < JWKS_REFETCH_SECONDS and keys is not None:
            return keys  # fetched moments ago: the kid is simply unknown
        document = self._get_json(self.metadata()["jwks_uri"], "JWKS")
        listed = document.get("keys")
        if not isinstance(listed, list):
            raise SignInFailed("discovery", f"{self.config.label}'s JWKS has no keys", 502)
        usable = []
        for jwk in listed[:MAX_KEYS]:
            if isinstance(jwk, dict) and jwk.get("use", "sig") == "sig" and jwk.get("kty") in ("RSA", "EC", "OKP"):
                try:
                    usable.append(KeySet.import_key_set({"keys": [jwk]}).keys[0])
                except Exception:  # a key seclake cannot read is skipped, the others kept
                    log.warning("oidc: %s: a JWKS key could not be read (kid %r)", self.config.name, jwk.get("kid"))
        keys = KeySet(usable)
        with self.lock:
            self.keyset, self.keyset_at = keys, time.monotonic()
        if kid is not None and not _has_kid(keys, kid):
            log.info("oidc: %s: JWKS refetched, key id %r still unknown", self.config.name, kid[:100])
        return keys


class Oidc:
    def __init__(self, settings: Settings, users: Users, login: Login, audit: Audit, metrics: Metrics):
        self.settings = settings
        self.users = users
        self.login = login
        self.audit = audit
        self.metrics = metrics
        self._providers = {p.name: ProviderState(p) for p in settings.oidc_providers}
        self._pending: TTLCache[str, Pending] = TTLCache(MAX_PENDING, PENDING_SECONDS)
        self._handoffs: TTLCache[str, Handoff] = TTLCache(MAX_PENDING, HANDOFF_SECONDS)
        self._by_client: dict[str, deque[tuple[float, str]]] = {}
        self._lock = threading.Lock()

    # -- what the sign-in page shows -----------------------------------------

    def providers(self) -> list[OidcProvider]:
        return [state.config for state in self._providers.values()]

    # -- the flow ------------------------------------------------------------

    def start(self, name: str, redirect_uri: str, next_path: str, client: str) -> tuple[str, str]:
        """The provider's authorization URL and the state (for the browser's cookie)."""
        try:
            state = self._provider(name)
            metadata = state.metadata()
        except SignInFailed as failure:
            self._failed(name, "", client, failure)
        verifier = secrets.token_urlsafe(48)  # 64 characters, RFC 7636's 43-128
        flow = secrets.token_urlsafe(32)
        nonce = secrets.token_urlsafe(32)
        with self._oauth(state.config, redirect_uri) as oauth:
            url, _ = oauth.create_authorization_url(
                metadata["authorization_endpoint"], state=flow, nonce=nonce, code_verifier=verifier,
            )
        with self._lock:
            mine = self._in_progress(client)
            if mine < MAX_PENDING_PER_CLIENT:
                full = len(self._pending) >= MAX_PENDING
                self._pending[flow] = Pending(name, nonce, verifier, redirect_uri, _local_path(next_path), client)
                self._by_client.setdefault(client, deque()).append((time.monotonic() + PENDING_SECONDS, flow))
        if mine >= MAX_PENDING_PER_CLIENT:
            self._failed(name, "", client, SignInFailed(
                "too_many", f"{MAX_PENDING_PER_CLIENT} sign-ins are in progress from this address; "
                f"finish one or try again in {PENDING_SECONDS // 60} minutes", 429))
        if full:
            # The oldest flow in progress was dropped to make room: a flood of starts, or a limit too low.
            self.metrics.oidc_signins.labels(name, "dropped").inc()
            log.warning("oidc: %d sign-ins in progress: the oldest was dropped (its user must start again)", MAX_PENDING)
        return url, flow

    def finish(self, name: str, params: dict[str, str], cookie_state: str | None, client: str) -> tuple[str, str]:
        """Check the callback, open the session; a one-time code for it and the path to go to."""
        username = ""
        try:
            provider = self._provider(name)
            flow = params.get("state") or ""
            with self._lock:
                pending = self._pending.pop(flow, None) if flow else None
                if pending is not None and pending.client in self._by_client:
                    # No longer in progress: it stops counting toward its address's bound at once.
                    self._by_client[pending.client] = deque(e for e in self._by_client[pending.client] if e[1] != flow)
                    self._prune(pending.client)
            if pending is None or pending.provider != name:
                raise SignInFailed("state", "this sign-in is unknown, expired or already used (state); start again")
            if not cookie_state or not hmac.compare_digest(cookie_state, flow):
                raise SignInFailed("state", "this sign-in was not started in this browser (state); start again")
            if params.get("error"):
                what = (params.get("error_description") or params["error"])[:300]
                raise SignInFailed("provider_error", f"{provider.config.label} refused the sign-in: {what}")
            code = params.get("code")
            if not code:
                raise SignInFailed("no_code", f"{provider.config.label} sent no authorization code")
            claims = self._exchange(provider, code, pending)
            username = _claimed_username(provider.config, claims)
            user, changed = self._user(provider.config, username, claims)
            detail = f"signed in with {provider.config.label} (sub {str(claims.get('sub'))[:100]!r})"
            signed_in = self.login.open(
                user, client, call=f"auth/oidc/{name}"[:200], detail=detail + (f"; {changed}" if changed else ""),
            )
        except SignInFailed as failure:
            self._failed(name, username, client, failure)
        handoff = secrets.token_urlsafe(32)
        with self._lock:
            self._handoffs[handoff] = Handoff(signed_in)
        self.metrics.oidc_signins.labels(name, "ok").inc()
        log.info("oidc: %r signed in with %s from %s", username, name, client or "an unknown address")
        return handoff, pending.next

    def _in_progress(self, client: str) -> int:
        """Flows ``client`` has in progress (under ``self._lock``). Each address
        keeps its flows in start order; those finished, expired or pushed out
        leave from the front, and the whole map is swept when it holds twice as
        many addresses as flows may be in progress (so addresses gone for good
        do not pile up; a sweep leaves at most half, so sweeps stay rare)."""
        if len(self._by_client) >= 2 * MAX_PENDING:
            for address in list(self._by_client):
                self._prune(address)
        return self._prune(client)

    def _prune(self, client: str) -> int:
        flows = self._by_client.get(client)
        if flows is None:
            return 0
        now = time.monotonic()
        while flows and (flows[0][0] < now or flows[0][1] not in self._pending):
            flows.popleft()
        if not flows:
            del self._by_client[client]
        return len(flows)

    def session(self, code: str) -> SignIn:
        """The session a sign-in just opened, for its one-time code (single use)."""
        with self._lock:
            handoff = self._handoffs.pop(code, None)
        if handoff is None:
            raise SignInFailed("handoff", "this sign-in code is unknown, expired or already used; sign in again")
        return handoff.signed_in

    # -- talking to the provider ---------------------------------------------

    def _provider(self, name: str) -> ProviderState:
        state = self._providers.get(name)
        if state is None:
            raise SignInFailed("unknown_provider", f"no identity provider named {name[:40]!r} on this server", 404)
        return state

    def _oauth(self, config: OidcProvider, redirect_uri: str) -> OAuth2Session:
        secret = config.client_secret.get_secret_value() if config.client_secret else None
        return OAuth2Session(
            client_id=config.client_id, client_secret=secret, scope=" ".join(config.scopes),
            redirect_uri=redirect_uri, code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )

    def _exchange(self, state: ProviderState, code: str, pending: Pending) -> dict[str, Any]:
        config = state.config
        metadata = state.metadata()
        try:
            with self._oauth(config, pending.redirect_uri) as oauth:
                token = oauth.fetch_token(
                    metadata["token_endpoint"], grant_type="authorization_code", code=code[:2000],
                    code_verifier=pending.verifier, redirect_uri=pending.redirect_uri, timeout=HTTP_SECONDS,
                )
        except requests.RequestException as e:
            raise SignInFailed("unreachable", f"identity provider {config.label} is unreachable (token endpoint): {type(e).__name__}", 502) from e
        except Exception as e:  # Authlib's OAuthError and friends: the provider refused the code
            raise SignInFailed("token", f"{config.label} refused the authorization code: {str(e)[:300]}") from e
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignInFailed("token", f"{config.label} sent no ID token (is the openid scope allowed?)")
        return self._validate(state, id_token, pending.nonce)

    def _validate(self, state: ProviderState, id_token: str, nonce: str) -> dict[str, Any]:
        config = state.config
        try:
            header = extract_compact(id_token.encode()).protected
        except Exception as e:
            raise SignInFailed("id_token", f"{config.label}'s ID token is not a signed JWT") from e
        kid = header.get("kid") if isinstance(header.get("kid"), str) else None
        if header.get("alg") not in ALGORITHMS:
            raise SignInFailed("id_token", f"{config.label}'s ID token is signed with {str(header.get('alg'))[:20]!r}, "
                               f"not one of {', '.join(ALGORITHMS)}")
        keys = state.keys(kid)
        if kid is not None and not _has_kid(keys, kid):
            raise SignInFailed("signature", f"{config.label}'s ID token is signed by a key it does not publish (kid {kid[:100]!r})")
        try:
            token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
        except jose_errors.JoseError as e:
            raise SignInFailed("signature", f"{config.label}'s ID token signature does not verify ({e.error})") from e
        claims = token.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=config.leeway_seconds,
            iss={"essential": True, "value": config.issuer},
            aud={"essential": True, "value": config.client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except jose_errors.ExpiredTokenError as e:
            raise SignInFailed("expired", f"{config.label}'s ID token has expired (exp {claims.get('exp')}, "
                               f"leeway {config.leeway_seconds} s): is a clock wrong?") from e
        except jose_errors.ClaimError as e:
            raise SignInFailed("claims", f"{config.label}'s ID token: {e.description}") from e
        # OpenID Connect Core 3.1.3.7: several audiences need azp naming this client.
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != config.client_id:
            raise SignInFailed("claims", f"{config.label}'s ID token is meant for several clients and azp is not this one")
        return claims

    # -- the seclake user ----------------------------------------------------

    def _user(self, config: OidcProvider, username: str, claims: dict[str, Any]) -> tuple[User, str]:
        """The seclake user, and what this sign-in changed of it (for the audit)."""
        groups = _groups(claims.get(config.groups_claim))
        roles = sorted({r for g in groups for r in config.roles.get(g, ())})
        if not roles and config.roles:
            roles = list(config.default_roles)
        policies: list[str] | None = None
        if config.data_policies:
            matched = [g for g in groups if g in config.data_policies]
            if not matched:
                # No group names a policy: all data would be open (no policy is no
                # restriction), so the user is refused instead.
                raise SignInFailed("no_policy", f"no group of {username!r} has a data policy for "
                                   f"{config.label} (setting data_policies); ask an administrator", 403)
            policies = sorted({p for g in matched for p in config.data_policies[g]}) or None
        try:
            user = self.users.get(username)
        except SeclakeError:
            user = None
        managed: dict[str, Any] = {}
        if config.roles:
            if not roles:
                raise SignInFailed("no_role", f"no group of {username!r} has a role for {config.label} "
                                   f"(settings roles, default_roles); ask an administrator", 403)
            managed["roles"] = roles
        if config.data_policies:
            managed["dataPolicies"] = policies
        names = _names(claims)
        if user is None:
            if not config.create_users:
                raise SignInFailed("not_provisioned", f"{username!r} has no seclake account and {config.label} users are "
                                   "not created at sign-in (create_users = false); ask an administrator to add it", 403)
            initial = managed.get("roles") or list(config.default_roles)
            if not initial:
                raise SignInFailed("no_role", f"{username!r} would have no role with {config.label} "
                                   "(settings roles, default_roles); ask an administrator", 403)
            try:
                created = self.users.add({
                    "username": username, "oauthProvider": config.name, "oauthFlag": True, "roles": initial,
                    **({"dataPolicies": policies} if config.data_policies else {}), **names,
                }, where=f"oidc_providers.{config.name}")
                return created, f"user created with roles {list(created.roles)}"
            except Conflict:
                user = self.users.get(username)  # made by a sign-in of the same user at the same moment
            except SeclakeError as e:
                raise SignInFailed("user", f"{username!r} could not be created: {e}", 403) from e
        if user.oauth_provider.lower() not in (config.name.lower(), config.label.lower()):
            # A local account (or another provider's) of the same name is never
            # taken over by whoever the provider calls by that name.
            raise SignInFailed("not_linked", f"the seclake user {username!r} does not sign in with {config.label} "
                               f"(its oauthProvider is {user.oauth_provider!r}); ask an administrator", 403)
        if user.disabled:
            raise SignInFailed("disabled", f"the seclake user {username!r} is disabled", 403)
        columns = {"roles": "roles", "dataPolicies": "data_policies"}
        changes = {k: v for k, v in managed.items() if v != getattr(user, columns[k])}
        if changes:
            before = {k: getattr(user, columns[k]) for k in changes}
            try:
                user = self.users.update({"username": username, **changes}, where=f"oidc_providers.{config.name}")
            except SeclakeError as e:
                raise SignInFailed("user", f"{username!r}'s roles could not be set: {e}", 403) from e
            # In the sign-in's audit entry: access changed by the provider's groups, not by an admin.
            return user, "; ".join(f"{k} {before[k]} -> {v} (groups)" for k, v in changes.items())
        return user, ""

    def _failed(self, name: str, username: str, client: str, failure: SignInFailed) -> Any:
        label = name if name in self._providers else "unknown"
        self.metrics.oidc_signins.labels(label, failure.reason).inc()
        self.audit.login(username or "", client, False, f"{failure.reason}: {failure}", call=f"auth/oidc/{name[:40]}")
        # %r: the name comes from the URL and the message may quote the provider's words (no line breaks in the log).
        log.warning("oidc: sign-in with %r refused (%s) from %s: %r", name[:40], failure.reason,
                    client or "an unknown address", str(failure))
        raise failure


def _has_kid(keys: KeySet, kid: str) -> bool:
    return any(k.kid == kid for k in keys.keys)


def _claimed_username(config: OidcProvider, claims: dict[str, Any]) -> str:
    value = claims.get(config.username_claim)
    if config.username_claim == "email" and claims.get("email_verified") is False:
        raise SignInFailed("claims", f"{config.label} says this e-mail address is not verified", 403)
    if not isinstance(value, str) or not USERNAME.fullmatch(value):
        raise SignInFailed("claims", f"{config.label}'s ID token has no usable {config.username_claim!r} claim "
                           "(1-128 letters, digits and . _ @ + -; setting username_claim)", 403)
    return value


def _groups(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [g for g in value[:MAX_GROUPS] if isinstance(g, str)]


def _names(claims: dict[str, Any]) -> dict[str, str]:
    out = {}
    for claim, key, size in (("given_name", "firstName", 100), ("family_name", "lastName", 100), ("email", "email", 254)):
        value = claims.get(claim)
        # What a record would refuse (a long or odd e-mail) is left out, not a reason to refuse the user.
        if isinstance(value, str) and value.isprintable() and len(value) <= size and (key != "email" or EMAIL.fullmatch(value)):
            out[key] = value
    return out


def _local_path(path: str) -> str:
    """Where to land after sign-in: a path of this site only, never elsewhere."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path or len(path) > MAX_NEXT:
        return "/search"
    if path.startswith("/login") or path.startswith("/auth/"):
        return "/search"
    return path
