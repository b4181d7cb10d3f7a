"""What one chat request may hold, the same on /chat and on /v1/chat/completions."""

MAX_MESSAGES = 50
MAX_MESSAGE_CHARS = 20_000
MAX_TOTAL_CHARS = 100_000
MAX_DOC_IDS = 100

# Saved conversations. One is stored as one item (DynamoDB items hold at most 400 KB), so its
# messages, encoded as JSON, stay under MAX_CONVERSATION_BYTES.
MAX_TITLE_CHARS = 120
MAX_CONVERSATION_BYTES = 350_000
MAX_CONVERSATIONS_LISTED = 500
CONVERSATION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# A rating's comment on one saved answer.
MAX_FEEDBACK_CHARS = 2_000
# Collections one question may be scoped to.
MAX_SCOPE_COLLECTIONS = 50
