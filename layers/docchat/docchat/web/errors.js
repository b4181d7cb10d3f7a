// What went wrong, in words for the person using the page.

/** Thrown by every API call once the sign-in session has ended. */
export class SignInRequired extends Error {
  constructor() {
    super("you are signed out: sign in again, then retry");
  }
}

/** A cited document that is no longer in the library. */
export class DocumentGone extends Error {
  constructor() {
    super("This document is no longer in your library: it was deleted after this answer was " +
      "written. The passage the answer quoted is below.");
  }
}

/** True when fetch got no HTTP answer at all (it rejects with a TypeError, "Failed to fetch"). */
export function unreachable(error) {
  return error instanceof TypeError && /fetch|network/i.test(error.message);
}

/** The message of the API's JSON error shape, or the status when the body is not one. */
export async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) return body.error.message;
  } catch (_) { /* not JSON */ }
  return `the server answered HTTP ${response.status}`;
}
