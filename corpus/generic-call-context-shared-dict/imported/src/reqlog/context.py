"""The request's values, as jupyter_server's CallContext keeps them before #1561: one dict per
request in a ContextVar, written in place."""
from contextvars import ContextVar

request_values: ContextVar[dict] = ContextVar("request_values")


def start(user):
    request_values.set({"user": user})
