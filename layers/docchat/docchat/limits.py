"""What one chat request may hold, the same on /chat and on /v1/chat/completions."""

MAX_MESSAGES = 50
MAX_MESSAGE_CHARS = 20_000
MAX_TOTAL_CHARS = 100_000
MAX_DOC_IDS = 100
