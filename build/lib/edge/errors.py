"""The one exception tree of edge; library errors are translated into it once, at the edge.

    EdgeError
    ├── ConfigError          bad or missing configuration (fatal at start, names file and key)
    ├── ProviderError        the model server failed
    │   ├── ProviderUnavailable   refused, dropped, timed out, 5xx, 429 (`retryable` says if a retry may help)
    │   ├── ModelNotFound         the server does not have the model
    │   ├── ToolsUnsupported      the model rejects tool definitions
    │   └── ProviderProtocolError the server answered something we cannot read
    ├── ToolError            a tool call could not be carried out (the text goes back to the model)
    │   ├── ToolArgumentError     arguments do not match the tool's schema
    │   ├── PolicyDenied          the policy gate or the user said no
    │   └── ToolTimeout           the call ran past its time limit
    └── StorageError         the database failed (disk full, corrupt, busy too long)
"""


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING = _Missing()  # "found" value of a ConfigError for a key that is absent


class EdgeError(Exception):
    """Base of every error edge raises on purpose; its message is meant for the user."""


class ConfigError(EdgeError):
    def __init__(self, source: str, key: str, found: object, expected: str) -> None:
        self.source, self.key, self.found, self.expected = source, key, found, expected
        super().__init__(f"{source}: {key} = {found!r}: expected {expected}")


class ProviderError(EdgeError):
    pass


class ProviderUnavailable(ProviderError):
    """Unreachable or overloaded; a fallback provider may answer. Busy and dropped are worth retrying,
    refused is not: nothing is listening."""

    def __init__(self, message: str, retry_after: float | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.retryable = retryable


class ModelNotFound(ProviderError):
    pass


class ToolsUnsupported(ProviderError):
    pass


class ProviderProtocolError(ProviderError):
    pass


class ToolError(EdgeError):
    pass


class ToolArgumentError(ToolError):
    pass


class PolicyDenied(ToolError):
    pass


class ToolTimeout(ToolError):
    pass


class StorageError(EdgeError):
    pass
