"""boto3 clients and raw signed requests against a test server."""

import hashlib
import http.client
import urllib.parse

import boto3
import botocore
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from tessera_server import ACCESS_KEY, REGION, SECRET_KEY


def client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, **config):
    """A path-style SigV4 S3 client with no retries (a retry would hide a
    server error)."""
    options = dict(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=10,
        read_timeout=60,
    )
    options.update(config)
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=REGION,
        config=Config(**options),
    )


def error_of(context):
    """(code, HTTP status) of the ClientError caught by assertRaises."""
    response = context.exception.response
    return response["Error"].get("Code"), response["ResponseMetadata"]["HTTPStatusCode"]


class RawResponse:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-cased names
        self.body = body

    def __repr__(self):
        return f"RawResponse({self.status}, {self.headers}, {self.body[:500]!r})"


def signed_headers(endpoint, method, path, query="", body=b"", headers=None,
                   access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    """`headers` plus botocore's SigV4 headers for the request (a signed
    payload hash of `body`)."""
    url = endpoint + path + (("?" + query) if query else "")
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(Credentials(access_key, secret_key), "s3", REGION).add_auth(request)
    return dict(request.headers.items())


def raw_request(endpoint, method, path, query="", body=b"", headers=None, sign=True,
                access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    """One HTTP request with http.client, SigV4-signed by botocore unless
    `sign` is False; `path` is sent as given (already percent-encoded)."""
    headers = dict(headers or {})
    if sign:
        headers = signed_headers(endpoint, method, path, query, body, headers, access_key, secret_key)
    parsed = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        target = path + (("?" + query) if query else "")
        conn.request(method, target, body=body or None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return RawResponse(
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            data,
        )
    finally:
        conn.close()


def no_url_encoding_client(endpoint):
    """A client whose listings do not ask for encoding-type=url (boto3 asks
    for it by default and decodes the answer), so XML escaping is tested."""
    c = client(endpoint)
    for op in ("ListObjects", "ListObjectsV2", "ListObjectVersions"):
        c.meta.events.unregister(
            f"before-parameter-build.s3.{op}",
            botocore.handlers.set_list_objects_encoding_type_url,
        )
    return c
