"""Operations on a deployed docchat stack that CloudFormation cannot do by itself, run with the
caller's AWS credentials (the Makefile's `destroy` and `reindex` targets):

- `empty STACK`: delete every object version and delete marker in the stack's two buckets, so
  that deleting the stack can delete them (CloudFormation deletes only empty buckets, and the
  documents bucket is versioned). It deletes your documents: it asks for the stack's name first.
- `reindex STACK`: copy every current object of the documents bucket onto itself. Each copy is
  a real S3 event, and Register ingests again every document whose registry entry does not
  name the stack's current index: after CollectionGeneration, CollectionStandbyReplicas or the
  embedding model changed, the new index gets every document; the others are left as they are.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

#: DeleteObjects takes at most 1,000 keys a request.
DELETE_BATCH = 1000


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    """The stack's outputs by key (DescribeStacks)."""
    [found] = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    return {o["OutputKey"]: o.get("OutputValue", "") for o in found.get("Outputs") or []}


def _versions(s3: Any, bucket: str) -> Iterator[dict[str, str]]:
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
            yield {"Key": item["Key"], "VersionId": item["VersionId"]}


def empty_bucket(s3: Any, bucket: str) -> int:
    """Delete every object version and delete marker in `bucket`; how many were deleted."""
    deleted = 0
    batch: list[dict[str, str]] = []
    for version in [*_versions(s3, bucket)]:
        batch.append(version)
        if len(batch) == DELETE_BATCH:
            deleted += _delete(s3, bucket, batch)
            batch = []
    if batch:
        deleted += _delete(s3, bucket, batch)
    return deleted


def _delete(s3: Any, bucket: str, batch: list[dict[str, str]]) -> int:
    answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    errors = answer.get("Errors", [])
    if errors:
        first = errors[0]
        raise RuntimeError(
            f"S3 kept {len(errors)} of {len(batch)} versions in {bucket} "
            f"({first.get('Code')}: {first.get('Message')} on {first.get('Key')})"
        )
    return len(batch)


def reindex(s3: Any, bucket: str) -> int:
    """Copy each current object of `bucket` onto itself (a new version with the same bytes and
    metadata); how many were copied."""
    copied = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            key = item["Key"]
            head = s3.head_object(Bucket=bucket, Key=key)
            s3.copy(
                {"Bucket": bucket, "Key": key},
                bucket,
                key,
                ExtraArgs={
                    "MetadataDirective": "REPLACE",
                    "Metadata": head.get("Metadata", {}),
                    "ContentType": head.get("ContentType", "application/octet-stream"),
                },
            )
            copied += 1
    return copied


def main(argv: list[str], *, session: Any = None, answer: Any = input) -> int:
    parser = argparse.ArgumentParser(prog="stack_tools", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("empty", "reindex"))
    parser.add_argument("stack", help="the stack's name")
    parser.add_argument("--yes", action="store_true", help="do not ask before emptying")
    args = parser.parse_args(argv)
    if not args.stack:
        print("give the stack's name: make destroy STACK=<name> (or reindex)", file=sys.stderr)
        return 2
    if session is None:
        import boto3

        session = boto3.Session()
    outputs = stack_outputs(session.client("cloudformation"), args.stack)
    s3 = session.client("s3")
    documents = outputs["DocumentsBucketName"]
    if args.command == "reindex":
        print(f"copied {reindex(s3, documents)} objects in {documents} onto themselves")
        return 0
    buckets = [documents, outputs["ArtifactsBucketName"]]
    if not args.yes:
        typed = answer(
            f"This deletes every document and version in {', '.join(buckets)}. "
            f"Type the stack's name ({args.stack}) to go on: "
        )
        if typed.strip() != args.stack:
            print("nothing deleted", file=sys.stderr)
            return 1
    for bucket in buckets:
        print(f"deleted {empty_bucket(s3, bucket)} object versions from {bucket}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
