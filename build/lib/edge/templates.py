"""What `edge init` writes: the commented config and the workspace files read into the prompt.

Kept as Python strings so the standalone build needs no data files.
"""

CONFIG_TOML = """\
# edge.toml — configuration of edge. Every key is optional; the values shown are the defaults.
# Any key can be overridden from the environment: EDGE_<SECTION>__<KEY>, e.g. EDGE_PROVIDER__MODEL.
# Secrets never go here: name the environment variable (or systemd credential) that holds them.

[provider]
kind = "ollama"                      # "ollama" (native /api/chat) or "openai" (any /v1/chat/completions server)
base_url = "http://127.0.0.1:11434"  # Ollama's default; e.g. "http://127.0.0.1:8080/v1" for llama.cpp
model = "qwen2.5:3b"
api_key_env = ""                     # e.g. "OPENAI_API_KEY": the *name* of the variable holding the key
num_ctx = 8192                       # most context tokens edge asks for (clipped to the model's maximum)
keep_alive = "-1"                    # keep the model loaded ("-1"), or free RAM after idle ("5m")
think = false                        # thinking models answer faster and never empty with this off
timeout_s = 120.0                    # seconds without a byte from the server before giving up
max_retries = 3                      # retries on 429/503 and dropped connections

# Fallbacks are tried in order when the provider above is unreachable:
# [[provider.fallbacks]]
# kind = "openai"
# base_url = "https://api.openai.com/v1"
# model = "gpt-4o-mini"
# api_key_env = "OPENAI_API_KEY"

[agent]
max_tool_iterations = 8              # tool rounds per turn; then one final answer without tools
small_model = "auto"                 # "auto" (≤ 4B parameters or ≤ 8k context), "on" or "off"
reply_tokens = 1024                  # context kept free for the answer
workspace_budget_tokens = 1500       # most of AGENTS.md, SOUL.md, ... that goes into the prompt
max_concurrent_turns = 2             # turns in flight at once (requests to one local model queue anyway)
interrupt = false                    # true: a new message stops the running turn of its conversation
sender_messages_per_minute = 20      # brake against runaway loops; 0 = none

[gateway]                            # HTTP API, web chat and webhooks of `edge run`
enabled = true
host = "127.0.0.1"                   # another address needs pairing = true, and is logged loudly
port = 8765
pairing = true                       # clients get a token with the one-time code from `edge pair`
webhook_secret_env = ""              # e.g. "EDGE_WEBHOOK_SECRET": then POST /webhook needs X-Edge-Signature
requests_per_minute = 60             # per client
pairing_code_ttl_s = 3600.0          # how long a pairing code stays valid

[memory]
embedding_model = ""                 # "" = keyword recall only (offline); e.g. "all-minilm" (ollama pull all-minilm)
embedding_kind = ""                  # "" = the same kind of server as [provider]; or "ollama", "openai"
embedding_url = ""                   # "" = [provider] base_url
embedding_api_key_env = ""
dims = 384                           # the embedding model's vector size; changing it needs `edge memory reindex`
vector_weight = 0.7                  # hybrid score = 0.7 × meaning + 0.3 × keywords
keyword_weight = 0.3
min_relevance = 0.4                  # recalled memories must score at least this
top_k = 5
oversample = 30                      # quantized candidates per result, re-ranked exactly
mmr = false                          # prefer diverse memories over near-duplicates
mmr_lambda = 0.7
recency_half_life_days = 0.0         # 0 = off; else older daily/conversation memories count less
inject_budget_tokens = 400           # most recalled memory put into a turn
history_budget_tokens = 0            # longer sessions are summarised; 0 = ¾ of what the context leaves for history
upkeep_interval_h = 6.0              # every so often: archive/purge, missing vectors, MEMORY_SNAPSHOT.md
daily_archive_days = 30              # daily notes are archived after this many days
archive_purge_days = 365             # archived memories are deleted after this many days
conversation_retention_days = 90     # memories saved from conversations are kept this long

[telegram]                           # on when the bot token is in the variable below
enabled = true
token_env = "TELEGRAM_BOT_TOKEN"     # the *name* of the variable (or systemd credential) with the token
api_base = "https://api.telegram.org"
allowed_users = []                   # e.g. ["123456789", "@ada"]; anyone else must pair (`edge pair approve CODE`)
notify_chat = ""                     # chat id for notifications; "" = the first allowed user
poll_timeout_s = 30
edit_interval_s = 1.0                # how often a streaming reply is edited in place

[paths]
state_dir = ""                       # "" = $STATE_DIRECTORY under systemd, else ~/.local/state/edge
workspace = ""                       # "" = <state_dir>/workspace

[security]
autonomy = "supervised"              # "readonly", "supervised" (risky tools ask first) or "full"
approval_timeout_s = 120.0           # an unanswered approval counts as "no"

[location]                           # for "sunrise" / "sunset" schedules and local times
latitude = 0.0                       # e.g. 52.52 (north is positive); 0, 0 = not set
longitude = 0.0                      # e.g. 13.405 (east is positive)
timezone = ""                        # e.g. "Europe/Berlin"; "" = the system's

[scheduler]                          # jobs: `edge cron add`, or "remind me at 7 …" in chat
enabled = true
channel = "telegram"                 # where job results go by default; "log" = only the run history
max_concurrent_jobs = 2
retries = 2                          # a failed run is tried again, after 30 s, then 60 s
retry_backoff_s = 30.0
disable_after_failures = 3           # failing runs in a row before a job is turned off (you are told)
job_timeout_s = 600.0
history_per_job = 50                 # runs kept per job (`edge cron history ID`)

[heartbeat]                          # every so often, edge reads HEARTBEAT.md and acts on its tasks
enabled = true
interval_min = 30.0
active_hours = ""                    # e.g. "08:00-22:00"; "" = at any hour
channel = "telegram"                 # where anything worth telling goes (HEARTBEAT_OK sends nothing)

[tools]
timeout_s = 30.0                     # per tool call
max_result_chars = 8000              # longer tool output is cut before the model sees it
shell_allow = ["date", "uptime", "uname", "df", "free", "ls", "cat", "head", "tail", "wc", "grep",
               "echo", "ping", "ip", "hostname", "whoami", "vcgencmd", "pinctrl", "i2cdetect", "systemctl"]

[log]
level = "info"                       # "debug", "info", "warning" or "error"
"""

WORKSPACE_FILES = {
    "AGENTS.md": """\
# How you work
You are edge, a personal assistant running on a small computer in the user's home.
- Answer briefly and plainly. Prefer one or two sentences.
- Use a tool when the answer depends on the real world (time, sensors, files, the system).
- Never invent tool results. If a tool fails, say what failed and what the user can do.
- Ask before doing anything that cannot be undone.
""",
    "SOUL.md": """\
# Character
Calm, practical and honest. You say when you do not know.
""",
    "USER.md": """\
# About the user
(Write here what edge should know about you: name, language, time zone, preferences.)
""",
    "TOOLS.md": """\
# Notes on tools
(Write here how your devices are set up, e.g. "the porch light is the relay on GPIO 17".)
""",
    "MEMORY.md": """\
# Long-term notes
(Facts worth keeping across conversations.)
""",
    "HEARTBEAT.md": """\
# Heartbeat tasks
(List here what edge should check on its own every so often, one task per line.
While this file holds no task, the heartbeat makes no model call at all.)
""",
}
