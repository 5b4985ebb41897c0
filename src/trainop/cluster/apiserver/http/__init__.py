"""The HTTP face of the API server: the aiohttp application and dispatch (``server``), paths
(``routing``), TLS and tokens (``tls``, ``auth``), request bodies (``bodies``), errors as
``Status`` (``status``), discovery and OpenAPI documents (``discovery``, ``openapi``)."""
