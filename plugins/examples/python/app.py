"""wc-like GOAT plugin in Python: lines/words/bytes of workspace files matching a glob.

Uses the WIT imports of world `goat:tool/file-tool` directly (wasi:filesystem
through the generated bindings), not Python's os/open, so it works whether or
not libc's own WASI imports are stubbed.
"""
import json
import re

import wit_world
from wit_world.exports import tool as t
from wit_world.imports import preopens, types
from componentize_py_types import Err

MAX_FILES = 2000
CHUNK = 64 * 1024


def glob_regex(pattern: str) -> "re.Pattern[str]":
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?"); i += 3; continue
        if pattern.startswith("**", i):
            out.append(".*"); i += 2; continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def count(data_iter):
    lines = words = nbytes = 0
    in_word = False
    for chunk in data_iter:
        nbytes += len(chunk)
        lines += chunk.count(b"\n")
        for b in chunk:
            space = b in b" \t\n\r\x0b\x0c"
            if not space and not in_word:
                words += 1
            in_word = not space
    return lines, words, nbytes


def read_chunks(fd):
    off = 0
    while True:
        chunk, end = fd.read(CHUNK, off)
        off += len(chunk)
        if chunk:
            yield chunk
        if end or not chunk:
            return


def fs_err(e, what):
    code = getattr(e, "value", e)
    if code == types.ErrorCode.NO_ENTRY:
        return Err(t.ToolError_NotFound(f"'{what}' does not exist"))
    if code in (types.ErrorCode.ACCESS, types.ErrorCode.NOT_PERMITTED):
        return Err(t.ToolError_PermissionDenied(f"'{what}': permission denied"))
    return Err(t.ToolError_Io(f"'{what}': {code}"))


def walk(root, rel, out, depth=0):
    if depth > 64 or len(out) > MAX_FILES:
        return
    d = root.open_at(types.PathFlags(0), rel or ".", types.OpenFlags.DIRECTORY, types.DescriptorFlags.READ)
    entries = d.read_directory()
    while True:
        e = entries.read_directory_entry()
        if e is None:
            break
        name = e.name if not rel else f"{rel}/{e.name}"
        if e.name == ".git":
            continue
        if e.type == types.DescriptorType.DIRECTORY:
            walk(root, name, out, depth + 1)
        elif e.type == types.DescriptorType.REGULAR_FILE:
            out.append(name)


class Tool(wit_world.exports.Tool):
    def spec(self) -> t.ToolSpec:
        return t.ToolSpec(
            name="count",
            description="Count lines, words and bytes in workspace files, like `wc`. "
            "`path` is a directory (default: the root); `glob` picks files under it (default '**').",
            parameters=json.dumps({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "glob": {"type": "string"},
                },
                "additionalProperties": False,
            }),
            access=t.Access.READ,
            path_fields=["path"],
        )

    def invoke(self, arguments: str) -> str:
        try:
            args = json.loads(arguments)
        except ValueError as e:
            raise Err(t.ToolError_InvalidArguments(f"arguments are not JSON: {e}"))
        if not isinstance(args, dict):
            raise Err(t.ToolError_InvalidArguments("arguments must be a JSON object"))
        base = (args.get("path") or "").strip("/")
        if base == ".":
            base = ""
        pattern = glob_regex(args.get("glob") or "**")
        dirs = preopens.get_directories()
        if not dirs:
            raise Err(t.ToolError_PermissionDenied("this tool was given no workspace"))
        root = dirs[0][0]
        files = []
        try:
            walk(root, base, files)
        except Err as e:
            raise fs_err(e, base or ".")
        rows, total = [], [0, 0, 0]
        for f in sorted(files):
            rel = f[len(base) + 1:] if base else f
            if not pattern.match(rel):
                continue
            try:
                fd = root.open_at(types.PathFlags(0), f, types.OpenFlags(0), types.DescriptorFlags.READ)
                c = count(read_chunks(fd))
            except Err as e:
                rows.append(f"(skipped {f}: {getattr(e, 'value', e)})")
                continue
            for i in range(3):
                total[i] += c[i]
            rows.append(f"{c[0]:>8} {c[1]:>8} {c[2]:>8} {f}")
        rows.append(f"{total[0]:>8} {total[1]:>8} {total[2]:>8} total")
        return "\n".join(rows)
