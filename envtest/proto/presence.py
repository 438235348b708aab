#!/usr/bin/env python3
"""Writes envtest/proto/presence.txt: which scalar fields of the vendored protobuf messages are
Go pointers (`ptr`: a zero value that is set means something, e.g. `replicas: 0`) or are written
by Go's JSON even when zero (`always`: no `omitempty`). The protobuf codec reads it to leave out,
as Go's JSON does, the zero values Go's protobuf encoder writes for every non-pointer field.
The meta/v1 messages objects embed are in presence-meta.txt, written by hand; messages listed in
neither (apiextensions', apiregistration's) keep present numbers and booleans and drop empty strings.

usage: envtest/proto/presence.py <checkout of k8s.io/api at the vendored version>
"""
import os
import re
import sys

api = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
struct_re = re.compile(r"^type (\w+) struct \{")
field_re = re.compile(r'^\s+(\w+)\s+(\S+)\s+`json:"([^"]*)".*protobuf:"([^"]*)"')
out = []
for group in sorted(os.listdir(os.path.join(here, "api"))):
    for version in sorted(os.listdir(os.path.join(here, "api", group))):
        path = os.path.join(api, group, version, "types.go")
        if not os.path.exists(path):
            continue
        struct = None
        fields = {}
        for line in open(path):
            m = struct_re.match(line)
            if m:
                struct = m.group(1)
                fields[struct] = ([], [])
                continue
            if line.startswith("}"):
                struct = None
                continue
            m = field_re.match(line)
            if not struct or not m:
                continue
            go_type, json_tag, pb_tag = m.group(2), m.group(3), m.group(4)
            name = re.search(r"name=(\w+)", pb_tag)
            if not name or json_tag in ("", ",inline"):
                continue
            if go_type.startswith("*"):
                fields[struct][0].append(name.group(1))
            elif "omitempty" not in json_tag.split(",")[1:]:
                fields[struct][1].append(name.group(1))
        for struct, (ptr, always) in sorted(fields.items()):
            out.append(f"api.{group}.{version}.{struct} ptr={','.join(ptr)} always={','.join(always)}")
with open(os.path.join(here, "presence.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
