// The API client: every call to docchat's API goes through `api`, which adds the credential the
// server wants. Never used for a presigned S3 URL: its signature is the credential, and an
// Authorization header would break it.

import { authMode, idToken, renewed, sessionEnded } from "./auth.js";

// `docchat serve --token`: every API call carries the server's token. The page asks for it
// once, when the server first answers with its own 401, and keeps it in this browser.
const TOKEN_KEY = "docchat-api-token";
const TOKEN_CHALLENGE = 'realm="docchat-serve"';

function challenged(response) {
  return response.status === 401 && (response.headers.get("WWW-Authenticate") || "").includes(TOKEN_CHALLENGE);
}

function tokenHeaders(refused = null) {
  if (refused && challenged(refused)) {
    const given = window.prompt("This docchat server needs its API token (the one given to docchat serve):");
    if (given) localStorage.setItem(TOKEN_KEY, given.trim());
  }
  const token = localStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** fetch() of an API path (relative to the page), signed in as the page is. */
export async function api(path, options = {}) {
  if (authMode() !== "cognito") {
    const send = (refused) => fetch(path, {
      ...options, headers: { ...(options.headers || {}), ...tokenHeaders(refused) },
    });
    // The page asks again (three times at most) while the server refuses the token it was given.
    let response = await send();
    for (let asked = 0; challenged(response) && asked < 3; asked += 1) response = await send(response);
    return response;
  }
  const send = async () => fetch(path, {
    ...options, headers: { ...(options.headers || {}), Authorization: await idToken() },
  });
  let response = await send();
  if (response.status === 401) {
    // Expired or revoked before the page's clock said so: refresh once, then give up.
    await renewed();
    response = await send();
    if (response.status === 401) throw sessionEnded();
  }
  return response;
}
