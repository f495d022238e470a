"""GET /: the web chat — one self-contained page (no build step, no CDN) speaking /ws/chat."""

from __future__ import annotations

from aiohttp import web

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>edge</title>
<style>
:root { --bg:#f6f6f3; --fg:#1d1d1b; --me:#dfe9f7; --bot:#fff; --muted:#777; --accent:#2c6e49 }
* { box-sizing: border-box } body { margin:0; font:16px/1.45 system-ui,sans-serif; background:var(--bg); color:var(--fg) }
main { max-width:760px; margin:0 auto; height:100vh; display:flex; flex-direction:column; padding:12px }
h1 { font-size:18px; margin:4px 0 10px } #status { color:var(--muted); font-size:13px; font-weight:normal }
#log { flex:1; overflow-y:auto; display:flex; flex-direction:column; gap:8px; padding-bottom:8px }
.msg { padding:8px 12px; border-radius:10px; max-width:85%; white-space:pre-wrap; word-wrap:break-word }
.me { align-self:flex-end; background:var(--me) } .bot { align-self:flex-start; background:var(--bot); border:1px solid #e2e2dd }
.info { align-self:flex-start; color:var(--muted); font-size:13px } .error { color:#a4262c }
.approval { align-self:flex-start; border:1px solid var(--accent); border-radius:10px; padding:8px 12px; background:#fff }
.approval button { margin:6px 6px 0 0 }
form { display:flex; gap:8px } input { flex:1; padding:10px; font-size:16px; border:1px solid #ccc; border-radius:8px }
button { padding:8px 14px; font-size:15px; border:0; border-radius:8px; background:var(--accent); color:#fff; cursor:pointer }
button.secondary { background:#888 } [hidden] { display:none !important }
</style></head>
<body><main>
<h1>edge <span id="status">connecting…</span></h1>
<form id="pair" hidden><input id="code" inputmode="numeric" autocomplete="one-time-code"
  placeholder="Pairing code (run: edge pair)"><button>Pair</button></form>
<div id="log"></div>
<form id="chat" hidden><input id="text" autocomplete="off" placeholder="Message edge…"><button>Send</button></form>
</main>
<script>
const $ = (id) => document.getElementById(id);
const log = $("log"), status = $("status");
let ws = null, bubbles = {};
function add(cls, text) {
  const div = document.createElement("div"); div.className = "msg " + cls; div.textContent = text;
  log.appendChild(div); log.scrollTop = log.scrollHeight; return div;
}
function showPairing(message) {
  $("chat").hidden = true; $("pair").hidden = false; status.textContent = message; $("code").focus();
}
$("pair").onsubmit = async (event) => {
  event.preventDefault();
  const response = await fetch("/pair", {method: "POST", headers: {"X-Pairing-Code": $("code").value.trim(),
                                                                   "X-Client-Name": "web chat"}});
  const body = await response.json();
  if (!response.ok) { status.textContent = body.error; return; }
  localStorage.setItem("edge-token", body.token); $("pair").hidden = true; connect();
};
function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/chat");
  ws.onopen = () => ws.send(JSON.stringify({type: "auth", token: localStorage.getItem("edge-token") || ""}));
  ws.onclose = (event) => {
    if (event.code === 4401) { localStorage.removeItem("edge-token"); showPairing("pair this browser first"); }
    else { status.textContent = "disconnected — retrying"; setTimeout(connect, 2000); }
  };
  ws.onmessage = (event) => handle(JSON.parse(event.data));
}
function handle(frame) {
  const id = frame.message_id;
  if (frame.type === "ready") { status.textContent = "connected"; $("chat").hidden = false; $("text").focus(); }
  else if (frame.type === "delta") { (bubbles[id] ||= add("bot", "")).textContent += frame.text; log.scrollTop = log.scrollHeight; }
  else if (frame.type === "tool" && frame.outcome !== "started") add("info", "· " + frame.tool + ": " + frame.outcome);
  else if (frame.type === "notice") add("info", "! " + frame.text);
  else if (frame.type === "approval") askApproval(frame);
  else if (frame.type === "final") {
    const bubble = bubbles[id] ||= add("bot", "");
    if (!bubble.textContent || frame.stopped) bubble.textContent = frame.text || bubble.textContent;
    delete bubbles[id];
  }
  else if (frame.type === "error") add("info error", frame.error);
}
function askApproval(frame) {
  const box = document.createElement("div"); box.className = "approval";
  box.appendChild(document.createTextNode(frame.text)); box.appendChild(document.createElement("br"));
  for (const [label, answer] of [["Approve", "yes"], ["Deny", "no"], ["Always", "always"]]) {
    const button = document.createElement("button"); button.textContent = label;
    if (answer === "no") button.className = "secondary";
    button.onclick = () => {
      ws.send(JSON.stringify({type: "approve", id: frame.approval_id, answer}));
      box.textContent = frame.text + " — " + label.toLowerCase();
    };
    box.appendChild(button);
  }
  log.appendChild(box); log.scrollTop = log.scrollHeight;
}
$("chat").onsubmit = (event) => {
  event.preventDefault();
  const text = $("text").value.trim(); if (!text || !ws) return;
  add("me", text); ws.send(JSON.stringify({type: "message", text})); $("text").value = "";
};
connect();
</script></body></html>
"""


async def serve(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type="text/html", charset="utf-8",
                        headers={"Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
                                 "script-src 'unsafe-inline'; connect-src 'self'"})
