"""Warning headers the embedded API server sends stay valid HTTP whatever the client sent."""

from trainop.cluster.apiserver.rest.writes import warning_header


def test_warning_headers_escape_control_and_non_ascii_characters() -> None:
    value = warning_header('unknown field "spec.\x10x\u00e4"')
    assert value.isascii()
    assert all(ch.isprintable() for ch in value)
    assert value == '299 - "unknown field \\"spec.\\u0010x\\u00e4\\""'
