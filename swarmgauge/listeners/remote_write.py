"""Prometheus remote-write 1.0 bodies: a ``WriteRequest`` in protobuf, snappy-compressed (block format).

The four messages the body needs (``Label``, ``Sample``, ``TimeSeries``, ``WriteRequest`` of Prometheus's
``prompb/types.proto`` and ``remote.proto``, same field numbers) are declared here as a descriptor in a private pool,
so the protobuf library encodes them without generated code or protoc; cramjam compresses. No Locust and no I/O.
Both libraries are imported by the first body made, not with this module: every worker imports the listeners, and
protobuf's descriptors are ~2.4 MiB that a run without ``--prometheus-remote-write`` never uses.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
# message -> (field name, number, FieldDescriptorProto type, repeated, message type name)
_MESSAGES: dict[str, list[tuple[str, int, str, bool, str]]] = {
    "Label": [("name", 1, "TYPE_STRING", False, ""), ("value", 2, "TYPE_STRING", False, "")],
    "Sample": [("value", 1, "TYPE_DOUBLE", False, ""), ("timestamp", 2, "TYPE_INT64", False, "")],
    "TimeSeries": [
        ("labels", 1, "TYPE_MESSAGE", True, ".prometheus.Label"),
        ("samples", 2, "TYPE_MESSAGE", True, ".prometheus.Sample"),
    ],
    "WriteRequest": [("timeseries", 1, "TYPE_MESSAGE", True, ".prometheus.TimeSeries")],
}


@cache
def write_request_class() -> Any:
    """The ``prometheus.WriteRequest`` message class, built once from the declaration above."""
    descriptor_pb2 = importlib.import_module("google.protobuf.descriptor_pb2")
    descriptor_pool = importlib.import_module("google.protobuf.descriptor_pool")
    message_factory = importlib.import_module("google.protobuf.message_factory")
    field_proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="swarmgauge/remote_write.proto", package="prometheus")
    file.syntax = "proto3"
    for message_name, fields in _MESSAGES.items():
        message = file.message_type.add(name=message_name)
        for field_name, number, field_type, repeated, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=getattr(field_proto, field_type))
            field.label = field_proto.LABEL_REPEATED if repeated else field_proto.LABEL_OPTIONAL
            if type_name:
                field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("prometheus.WriteRequest"))


def series_of(families: Iterable[Any], extra_labels: Mapping[str, str]) -> list[tuple[dict[str, str], float]]:
    """Each sample of prometheus-client metric families as (labels with ``__name__``, value); NaN ones left out."""
    series = []
    for family in families:
        for sample in family.samples:
            if math.isnan(sample.value):
                continue
            series.append(({**sample.labels, **extra_labels, "__name__": sample.name}, float(sample.value)))
    return series


def encode(series: Iterable[tuple[Mapping[str, str], float]], timestamp_ms: int) -> bytes:
    """The compressed body for one sample per series at ``timestamp_ms``; labels sorted by name, as the spec asks."""
    request = write_request_class()()
    for labels, value in series:
        entry = request.timeseries.add()
        for name in sorted(labels):
            entry.labels.add(name=name, value=labels[name])
        entry.samples.add(value=value, timestamp=timestamp_ms)
    return bytes(_snappy().compress_raw(request.SerializeToString()))


def decode(body: bytes) -> Any:
    """The ``WriteRequest`` in a compressed body (for tests and for reading back what was sent)."""
    request = write_request_class()()
    request.ParseFromString(bytes(_snappy().decompress_raw(body)))
    return request


@cache
def _snappy() -> Any:
    return importlib.import_module("cramjam").snappy
