// Sign-in: Cognito managed login with the authorization-code flow and PKCE.
//
// In the cloud stack every API route needs a Cognito ID token (the API Gateway authorizer has no
// OAuth scopes on its methods, so it takes the ID token). The page, its files and auth-config are
// open. Tokens live in sessionStorage: the sign-in redirect leaves the page, so the PKCE verifier
// must outlive it anyway, and a reload should not bounce through the sign-in page again; the
// storage belongs to this tab and origin only and ends with the tab. The page loads no third-party
// script and puts every server text in with textContent, which is what keeps them from other code.

import { $ } from "./dom.js";
import { SignInRequired, unreachable } from "./errors.js";

const TOKENS_KEY = "docchat.tokens";
const PENDING_KEY = "docchat.signin";

// mode: "none" (no sign-in), "iam" (the page cannot sign) or "cognito"; config: /auth-config.
const auth = { mode: "none", config: {}, tokens: null, refreshing: null };
const endListeners = [];

/** How the API wants to be called: "none", "iam" or "cognito". */
export const authMode = () => auth.mode;

/** Calls `listener` when the session ends (signed out, or a refresh refused). */
export function onSessionEnd(listener) {
  endListeners.push(listener);
}

/** The signed-in user's stable id (the token's `sub`), or "" when nobody signs in. */
export function userId() {
  return auth.mode === "cognito" && auth.tokens ? tokenClaims(auth.tokens.id).sub || "" : "";
}

function pageUrl() {
  // The page's own address without query or fragment: the client's callback and sign-out URL.
  return new URL(".", location.href).href;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function tokenClaims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0))));
  } catch (_) {
    return {};
  }
}

/** Leaves for the managed login page; it comes back to this page with a code. */
export async function signIn() {
  // RFC 7636: a verifier of 43-128 characters, its SHA-256 as the challenge; `state` ties the
  // answer to this request.
  const verifier = randomText(48);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = randomText(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier }));
  const url = new URL(`${auth.config.domain}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: auth.config.client_id,
    redirect_uri: pageUrl(),
    scope: auth.config.scopes,
    state,
    code_challenge: base64url(digest),
    code_challenge_method: "S256",
  });
  location.assign(url.href);
}

async function tokenRequest(fields) {
  const response = await fetch(`${auth.config.domain}/oauth2/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error_description || body.error || `the sign-in service answered HTTP ${response.status}`);
    // OAuth errors (invalid_grant...) come as HTTP 400 and are final; anything else may pass.
    error.refused = response.status === 400;
    throw error;
  }
  return body;
}

/** Refreshes the tokens; a refresh Cognito refuses ends the session, an outage is only thrown. */
export async function renewed() {
  try {
    await refreshTokens();
  } catch (error) {
    throw error.refused || error instanceof SignInRequired ? sessionEnded() : error;
  }
}

function keepTokens(body, refreshToken) {
  const lifetime = Number(body.expires_in || 3600) * 1000;
  // A refresh answers with new ID and access tokens only; the refresh token stays the same.
  auth.tokens = {
    id: body.id_token,
    refresh: body.refresh_token || refreshToken,
    expiresAt: Date.now() + lifetime,
    lifetime,
  };
  sessionStorage.setItem(TOKENS_KEY, JSON.stringify(auth.tokens));
}

function forgetTokens() {
  auth.tokens = null;
  sessionStorage.removeItem(TOKENS_KEY);
}

async function finishSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, "", pageUrl()); // the code is single-use: keep it out of the address bar
  if (params.has("error")) throw new Error(params.get("error_description") || params.get("error"));
  if (!pending || pending.state !== params.get("state")) {
    throw new Error("the answer from the sign-in page does not match this page's request");
  }
  keepTokens(await tokenRequest({
    grant_type: "authorization_code",
    client_id: auth.config.client_id,
    code: params.get("code"),
    redirect_uri: pageUrl(),
    code_verifier: pending.verifier,
  }));
}

function refreshTokens() {
  // One refresh at a time, shared by every call that needs it.
  if (!auth.refreshing) {
    const refresh = auth.tokens && auth.tokens.refresh;
    auth.refreshing = (refresh ? tokenRequest({
      grant_type: "refresh_token",
      client_id: auth.config.client_id,
      refresh_token: refresh,
    }) : Promise.reject(new SignInRequired()))
      .then((body) => keepTokens(body, refresh))
      .finally(() => { auth.refreshing = null; });
  }
  return auth.refreshing;
}

/** The ID token for the Authorization header, refreshed shortly before it expires. */
export async function idToken() {
  if (!auth.tokens) throw sessionEnded();
  // A tenth of its lifetime before it expires, at most a minute.
  const margin = Math.min(60000, auth.tokens.lifetime / 10);
  if (Date.now() >= auth.tokens.expiresAt - margin) await renewed();
  return auth.tokens.id;
}

/** Ends the session on the page: the sign-in panel again. The error to throw is returned. */
export function sessionEnded() {
  forgetTokens();
  for (const listener of endListeners) listener();
  // The session ends under the user's hands, a key maybe still going down: the panel takes
  // the focus, not its button, which that key (Enter in the question) would press.
  showSignIn("Your session has ended. Sign in again to continue.", { focus: "signin" });
  return new SignInRequired();
}

function showSignIn(text, { code = "", button = true, focus = "sign-in" } = {}) {
  $("app").hidden = true;
  $("account").hidden = true;
  $("signin").hidden = false;
  $("signin-text").textContent = text;
  $("signin-code").textContent = code;
  $("signin-code").hidden = !code;
  $("sign-in").hidden = !button;
  if (button) $(focus).focus();
}

function showApp() {
  $("signin").hidden = true;
  $("app").hidden = false;
  if (auth.mode === "cognito" && auth.tokens) {
    const claims = tokenClaims(auth.tokens.id);
    $("account-name").textContent = claims.email || claims["cognito:username"] || "";
    $("account").hidden = false;
  }
}

/** Signs out of this tab and of the managed login, which sends the browser back here. */
export async function signOut() {
  const refresh = auth.tokens && auth.tokens.refresh;
  forgetTokens();
  for (const listener of endListeners) listener();
  if (refresh) {
    // Revoking the refresh token ends what this tab could still renew; best effort.
    await fetch(`${auth.config.domain}/oauth2/revoke`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: refresh, client_id: auth.config.client_id }),
    }).catch(() => {});
  }
  // The managed login's own session (a cookie on its domain) ends at /logout.
  const url = new URL(`${auth.config.domain}/logout`);
  url.search = new URLSearchParams({ client_id: auth.config.client_id, logout_uri: pageUrl() });
  location.assign(url.href);
}

function iamHelp() {
  const region = auth.config.region || "<region>";
  return [
    `curl --aws-sigv4 "aws:amz:${region}:execute-api" \\`,
    '  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \\',
    '  -H "x-amz-security-token: $AWS_SESSION_TOKEN" \\',
    `  ${pageUrl()}documents`,
  ].join("\n");
}

/** Reads /auth-config and finishes or restores a sign-in; true when the page may call the API. */
export async function startAuth() {
  try {
    const response = await fetch("auth-config", { headers: { Accept: "application/json" } });
    if (response.ok) auth.config = await response.json();
  } catch (_) { /* an older server: no sign-in */ }
  auth.mode = auth.config.mode || "none";
  if (auth.mode === "iam") {
    showSignIn(
      "This docchat's API takes only AWS IAM (SigV4) signed requests, which a web page cannot " +
      "sign. Call it with your AWS credentials instead (curl 7.75+, awscurl or an AWS SDK), for " +
      "example as below, or deploy the stack with ApiAuth=COGNITO to use this page.",
      { code: iamHelp(), button: false });
    return false;
  }
  if (auth.mode !== "cognito") return true;
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("error")) {
    try {
      await finishSignIn(params);
    } catch (error) {
      forgetTokens();
      showSignIn(`Sign-in did not complete: ${unreachable(error) ? "the sign-in service could not be reached" : error.message}. Try again.`);
      return false;
    }
  } else {
    auth.tokens = JSON.parse(sessionStorage.getItem(TOKENS_KEY) || "null");
  }
  if (!auth.tokens) {
    showSignIn("Sign in with your docchat account to ask your documents.");
    return false;
  }
  showApp();
  return true;
}
