"""Kafka's wire protocol as a server needs it: framing, headers, the table of versions we
serve, request decoding and response encoding (on kafka-python's message classes), record
batches and compression. Pure: no sockets and no Twisted."""
