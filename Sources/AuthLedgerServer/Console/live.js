// The Live region: /v1/events (Server-Sent Events) read with fetch, so the Authorization
// header goes along (an EventSource cannot send it); after a break it reconnects with
// Last-Event-ID (the server resumes right after it, no gap, no duplicate).
import { savedToken } from "./api.js";

/**
 * Follows the feed from the head until `signal` aborts: `onEvent(seq, type, event)` for
 * each event, `onState(text)` for the connection's state.
 */
export async function follow({ onEvent, onState, signal }) {
  let last = null;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: "Bearer " + savedToken(), Accept: "text/event-stream" };
      if (last !== null) headers["Last-Event-ID"] = String(last);
      const res = await fetch("/v1/events", { headers, signal, cache: "no-store", credentials: "omit" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      onState(last === null ? "Connected: new events appear below." : `Reconnected after seq ${last}.`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "", frame = {};
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, "");
          buffer = buffer.slice(nl + 1);
          if (line === "") {
            if (frame.data !== undefined) {
              const seq = Number(frame.id);
              if (Number.isSafeInteger(seq)) last = seq;
              let event = null;
              try { event = JSON.parse(frame.data); } catch { /* shown without details */ }
              onEvent(seq, frame.event || "message", event);
            }
            frame = {};
          } else if (!line.startsWith(":")) {
            const c = line.indexOf(":");
            const field = c < 0 ? line : line.slice(0, c);
            const value = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
            if (field === "data") frame.data = frame.data === undefined ? value : frame.data + "\n" + value;
            else if (field === "id" || field === "event") frame[field] = value;
          }
        }
      }
      onState("The feed ended; reconnecting…");
    } catch (e) {
      if (signal.aborted) return;
      onState(`Disconnected (${e.message}); reconnecting…`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
