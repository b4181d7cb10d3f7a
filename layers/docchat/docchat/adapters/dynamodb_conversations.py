"""Saved conversations in DynamoDB: one item per conversation, keyed by its user and its id.

Key schema (the ConversationsTable of template.yaml): partition key `user` (S), the signed-in
user's Cognito `sub`, and sort key `conversation_id` (S). A composite primary key keeps one
user's items together, so listing them is a Query on the partition key and no request can
name another user's item without naming that user
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.CoreComponents.html#HowItWorks.CoreComponents.PrimaryKey,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html).
Messages are kept as one JSON string attribute (an answer's feedback inside its message, so
that it goes with the conversation and with the answer it rates), below DynamoDB's 400 KB item size
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html) by
MAX_CONVERSATION_BYTES. `user` is a DynamoDB reserved word: expressions name it through
placeholders (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ReservedWords.html).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from docchat.answer.conversations import decoded_messages, extended, now, rated, ratings_of
from docchat.limits import MAX_CONVERSATIONS_LISTED
from docchat.models import (
    Conversation,
    ConversationSummary,
    Feedback,
    RatedAnswer,
    StoredMessage,
)

#: Tries of an append (or a rating) that lost a race with another write to the same
#: conversation.
APPEND_TRIES = 5


class DynamoConversations:
    def __init__(self, table: Any) -> None:
        self._table = table  # a boto3 DynamoDB Table resource

    def conversations(self, user: str) -> list[ConversationSummary]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "#u = :u",
            "ProjectionExpression": "#c, #t, #m",
            "ExpressionAttributeNames": {
                "#u": "user",
                "#c": "conversation_id",
                "#t": "title",
                "#m": "updated",
            },
            "ExpressionAttributeValues": {":u": user},
        }
        while True:
            page = self._table.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        summaries = [
            ConversationSummary(
                id=str(i["conversation_id"]), title=str(i["title"]), updated=float(i["updated"])
            )
            for i in items
        ]
        summaries.sort(key=lambda s: (-s.updated, s.id))
        return summaries[:MAX_CONVERSATIONS_LISTED]

    def conversation(self, user: str, conversation_id: str) -> Conversation | None:
        item = self._item(user, conversation_id)
        return _conversation(item) if item else None

    def start(self, user: str, conversation_id: str, *, title: str) -> Conversation:
        stamp = Decimal(str(now()))
        item = {
            "user": user,
            "conversation_id": conversation_id,
            "title": title,
            "created": stamp,
            "updated": stamp,
            "messages": "[]",
        }
        try:
            self._table.put_item(
                Item=item,
                ConditionExpression="attribute_not_exists(conversation_id)",
            )
            return _conversation(item)
        except ClientError as exc:
            if not _conditional(exc):
                raise
        found = self.conversation(user, conversation_id)
        if found is None:  # deleted between the two requests: make it again
            return self.start(user, conversation_id, title=title)
        return found

    def append(
        self,
        user: str,
        conversation_id: str,
        messages: Sequence[StoredMessage],
        *,
        after: int | None = None,
    ) -> Conversation | None:
        return self._rewritten(
            user, conversation_id, lambda saved: extended(saved, messages, after=after)
        )

    def rate(
        self, user: str, conversation_id: str, position: int, feedback: Feedback | None
    ) -> Conversation | None:
        return self._rewritten(
            user, conversation_id, lambda saved: rated(saved, position, feedback)
        )

    def ratings(self, user: str, conversation_id: str) -> list[RatedAnswer] | None:
        found = self.conversation(user, conversation_id)
        return None if found is None else ratings_of(found)

    def _rewritten(
        self, user: str, conversation_id: str, change: Callable[[list[StoredMessage]], str]
    ) -> Conversation | None:
        """Read, change the messages, write back on the condition that nobody wrote in
        between (optimistic); None if the user has no such conversation."""
        for _ in range(APPEND_TRIES):
            item = self._item(user, conversation_id)
            if item is None:
                return None
            text = change(decoded_messages(str(item["messages"])))
            stamp = Decimal(str(now()))
            try:
                self._table.update_item(
                    Key=_key(user, conversation_id),
                    UpdateExpression="SET messages = :m, #up = :now",
                    ConditionExpression="#up = :seen",
                    ExpressionAttributeNames={"#up": "updated"},
                    ExpressionAttributeValues={
                        ":m": text,
                        ":now": stamp,
                        ":seen": item["updated"],
                    },
                )
            except ClientError as exc:
                if _conditional(exc):
                    continue
                raise
            return _conversation({**item, "messages": text, "updated": stamp})
        raise ClientError(
            {"Error": {"Code": "TransactionConflict", "Message": "too many concurrent writes"}},
            "UpdateItem",
        )

    def rename(self, user: str, conversation_id: str, *, title: str) -> ConversationSummary | None:
        try:
            response = self._table.update_item(
                Key=_key(user, conversation_id),
                UpdateExpression="SET title = :t, #up = :now",
                ConditionExpression="attribute_exists(conversation_id)",
                ExpressionAttributeNames={"#up": "updated"},
                ExpressionAttributeValues={":t": title, ":now": Decimal(str(now()))},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if _conditional(exc):
                return None
            raise
        return _conversation(response["Attributes"]).summary()

    def delete(self, user: str, conversation_id: str) -> bool:
        response = self._table.delete_item(Key=_key(user, conversation_id), ReturnValues="ALL_OLD")
        return bool(response.get("Attributes"))

    def every_conversation(self) -> Iterator[tuple[str, Conversation]]:
        """A Scan of the whole table, page by page
        (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html)."""
        kwargs: dict[str, Any] = {}
        while True:
            page = self._table.scan(**kwargs)
            for item in page.get("Items", []):
                yield str(item["user"]), _conversation(item)
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _item(self, user: str, conversation_id: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._table.get_item(
            Key=_key(user, conversation_id), ConsistentRead=True
        ).get("Item")
        return item


def _key(user: str, conversation_id: str) -> dict[str, str]:
    return {"user": user, "conversation_id": conversation_id}


def _conditional(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def _conversation(item: dict[str, Any]) -> Conversation:
    return Conversation(
        id=str(item["conversation_id"]),
        title=str(item["title"]),
        created=float(item["created"]),
        updated=float(item["updated"]),
        messages=decoded_messages(str(item["messages"])),
    )
