"""Helpers for the state tests on S3."""
import os


def s3_workspace(directory, url: str, bucket: str, key: str = "jsctl/state.json") -> str:
    """A jsctl.yaml in `directory` with one local cluster and the state in S3; its path."""
    path = os.path.join(str(directory), "jsctl.yaml")
    with open(path, "w") as fh:
        fh.write("clusters:\n  - {name: local, provider: local}\n"
                 f"state: {{backend: s3, bucket: {bucket}, key: {key}, region: us-east-1, endpoint_url: '{url}'}}\n")
    return path
