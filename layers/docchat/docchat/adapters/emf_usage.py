"""What each answer used, as CloudWatch metrics in the embedded metric format (EMF): one
Powertools `EphemeralMetrics` record per answer, written to stdout, which the chat function's
log group turns into metrics (https://docs.powertools.aws.dev/lambda/python/latest/core/metrics/,
"EphemeralMetrics": no state shared between answers answered at once).

Namespace `docchat`; dimensions `service` (chat), `user` and `collection` (answer/usage.py);
metrics Answers, InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens,
RerankSearchUnits (Bedrock rerank's billed queries), and CostUSD when
the model's price is known. A user or collection is a dimension value, so each pair is a metric
of its own: CloudWatch bills per metric, which for a team's tens of users and collections is a
few dollars a month (say so before using this for thousands).
"""

from __future__ import annotations

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from docchat.answer.usage import Spent

NAMESPACE = "docchat"


class EmfUsage:
    def record(self, spent: Spent) -> None:
        metrics = EphemeralMetrics(namespace=NAMESPACE, service="chat")
        metrics.add_dimension(name="user", value=spent.user)
        metrics.add_dimension(name="collection", value=spent.collection)
        usage = spent.usage
        metrics.add_metric(name="Answers", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="InputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
        metrics.add_metric(name="OutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
        metrics.add_metric(
            name="CacheReadTokens", unit=MetricUnit.Count, value=usage.cache_read_tokens
        )
        metrics.add_metric(
            name="CacheWriteTokens", unit=MetricUnit.Count, value=usage.cache_write_tokens
        )
        metrics.add_metric(
            name="RerankSearchUnits", unit=MetricUnit.Count, value=usage.rerank_search_units
        )
        if usage.cost_usd is not None:
            metrics.add_metric(name="CostUSD", unit=MetricUnit.NoUnit, value=usage.cost_usd)
        metrics.flush_metrics()
