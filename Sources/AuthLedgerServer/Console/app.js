// The console's entry point: sign-in (token in sessionStorage, never in a URL), the
// verifier key (pinned in localStorage), continuity, the front page (no user chosen), the
// user view and the Live feed.
import { ApiError, get, saveToken, savedToken } from "./api.js";
import { $, el, fill, outcome } from "./dom.js";
import { addRecent, hideHome, showHome, showLog, wireHome } from "./home.js";
import { follow } from "./live.js";
import { parseVerifierKey } from "./note.js";
import { cannotVerify, checkContinuity, pinKey, pinnedKey } from "./proof.js";
import { readRoute, takeTokenFromFragment } from "./route.js";
import { openUser, wireUserView } from "./userview.js";

const LIVE_MAX = Number(document.body.dataset.liveMax) || 200;
let live = null;
let paused = false;
const held = [];

function showLine(seq, type, event) {
  const who = event && event.user ? ` · ${event.user}` : "";
  const item = el("li", { "data-seq": seq }, `seq ${seq} · ${event?.at ?? ""} · ${type}${who}`);
  addRecent(event);
  if (paused) { held.push(item); fill($("pause"), `Resume (${held.length} held)`); return; }
  $("live").append(item);
  while ($("live").children.length > LIVE_MAX) $("live").firstElementChild.remove();
  $("live").scrollTop = $("live").scrollHeight;
}

function startLive() {
  live?.abort();
  live = new AbortController();
  follow({ onEvent: showLine, onState: (t) => fill($("live-state"), t), signal: live.signal });
}

async function showKey() {
  const pinned = pinnedKey();
  let served = null;
  try { served = (await get("/checkpoint/vkey", { as: "text" })).body.trim(); } catch (e) {
    fill($("vkey-status"), e instanceof ApiError && e.status === 403 ? "This token has no audit scope: proofs cannot be fetched." : `The server's verifier key could not be read: ${e.message}`);
  }
  $("vkey").value = pinned || served || "";
  if (pinned && served && pinned !== served) {
    fill($("vkey-status"), outcome(false, "Warning:", "the server now offers another verifier key than the one you pinned; proofs are checked against the pinned one."));
  } else if (pinned) {
    fill($("vkey-status"), "Pinned: proofs are checked against this key.");
  } else if (served) {
    fill($("vkey-status"), "Offered by the server, not pinned yet: check it against a copy you trust, then Pin.");
  }
}

async function showContinuity() {
  fill($("continuity"), "Continuity: checking…");
  const r = await checkContinuity();
  const [word, ...rest] = r.text.split(":");
  fill($("continuity"), "Continuity: ", r.first ? r.text : outcome(r.ok, word + ":", rest.join(":").trim()));
  $("continuity").dataset.ok = String(r.ok);
}

async function enter() {
  $("signin").hidden = true;
  $("app").hidden = false;
  $("signout").hidden = false;
  await showKey();
  showContinuity();
  startLive();
  show(readRoute());
}

/** The view of route `r`: a user's, or the front page when it names none. */
function show(r) {
  if (r.user) { hideHome(); openUser(r.user, r); } else showHome(r);
}

async function signIn(token) {
  try {
    // Any valid token may read /metrics: it checks the token, whatever its scopes.
    await get("/metrics", { as: "text", token });
  } catch (e) {
    fill($("signin-status"), e instanceof ApiError && e.status === 401 ? "Unknown token." : `Cannot sign in: ${e.message}`);
    return false;
  }
  saveToken(token);
  fill($("signin-status"), "");
  await enter();
  return true;
}

function signOut() {
  saveToken(null);
  live?.abort();
  location.hash = "";
  location.reload();
}

function main() {
  const fromLink = takeTokenFromFragment();
  const no = cannotVerify();
  fill($("context-note"), no ? `This page cannot verify proofs here: ${no}.` : "");
  wireUserView();
  $("signin-form").addEventListener("submit", (ev) => { ev.preventDefault(); signIn($("token").value.trim()); $("token").value = ""; });
  $("signout").addEventListener("click", signOut);
  $("vkey-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await parseVerifierKey($("vkey").value);
    } catch (e) {
      fill($("vkey-status"), outcome(false, "Not pinned:", e.message));
      return;
    }
    pinKey($("vkey").value);
    fill($("vkey-status"), "Pinned: proofs are checked against this key.");
    showContinuity();
    showLog();
  });
  $("user-form").addEventListener("submit", (ev) => { ev.preventDefault(); const u = $("user").value.trim(); if (u) { hideHome(); openUser(u, {}); } });
  wireHome();
  $("pause").addEventListener("click", () => {
    paused = !paused;
    if (!paused) { for (const item of held.splice(0)) $("live").append(item); $("live").scrollTop = $("live").scrollHeight; }
    fill($("pause"), paused ? "Resume" : "Pause");
    $("pause").setAttribute("aria-pressed", String(paused));
  });
  window.addEventListener("popstate", () => {
    // A sign-in link opened in a tab already on the console: same document, new fragment.
    const token = takeTokenFromFragment();
    if (token) { signIn(token); return; }
    if (savedToken()) show(readRoute());
  });
  if (fromLink) signIn(fromLink);
  else if (savedToken()) enter();
}

main();
