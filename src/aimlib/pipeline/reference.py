"""Reference pages generated from the code, for the docs site (``docs/hooks.py``): the
configuration keys from the completed schema (:func:`config_reference`) and the figure gallery
from the figure registry (:func:`figure_gallery`); the command line's page is
:func:`aimlib.cli.reference_markdown`.  Generated, so they cannot fall behind what they describe.
"""

from __future__ import annotations

from pathlib import Path

from aimlib.figures.registry import FIGURES
from aimlib.pipeline.checks import resolve_ref, schema, schema_properties

__all__ = ["config_keys", "config_reference", "figure_gallery"]


def _type(node: dict, root: dict) -> str:
    """A short type of a schema node: ``number``, ``integer or list of integer``, ``one of
    a, b``, ``object`` ..."""
    node = resolve_ref(node, root)
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"]) if node["enum"] \
            else "a registry name"
    if "oneOf" in node:
        return " or ".join(dict.fromkeys(_type(b, root) for b in node["oneOf"]))
    t = node.get("type")
    if isinstance(t, list):  # an option decided at run time: ["number", "null"]
        return " or ".join(_type({**node, "type": one}, root) for one in t)
    if t == "array":
        items = node.get("items")
        if items:
            return f"list of {_type(items, root)}"
        if node.get("prefixItems"):
            return "[" + ", ".join(_type(i, root) for i in node["prefixItems"]) + "]"
        return "list"
    if t == "object":
        return "mapping"
    if t == "number" and ("exclusiveMinimum" in node or "minimum" in node):
        bound = (f"> {node['exclusiveMinimum']}" if "exclusiveMinimum" in node
                 else f">= {node['minimum']}")
        return f"number {bound}"
    if t == "integer" and "minimum" in node:
        return f"integer >= {node['minimum']}"
    return t or "any"


def config_keys(schema: dict) -> list[tuple[str, str, object, str]]:
    """Every configuration key as ``(path, type, default, description)``, depth first;
    ``experiments.<name>`` stands for any experiment and ``<channel>`` for a channel's name."""
    rows: list[tuple[str, str, object, str]] = []

    def walk(prefix: str, node: dict, depth: int) -> None:
        node = resolve_ref(node, schema)
        for key, sub in schema_properties(node, schema).items():
            full = resolve_ref(sub, schema)
            path = f"{prefix}.{key}" if prefix else key
            rows.append((path, _type(sub, schema), full.get("default"),
                         " ".join(str(full.get("description", sub.get("description", "")))
                                  .split())))
            if depth < 4 and (full.get("type") == "object" or schema_properties(full, schema)):
                walk(path, full, depth + 1)
            for branch in full.get("oneOf", []):  # a grid, or one grid per channel
                b = resolve_ref(branch, schema)
                if depth < 4 and schema_properties(b, schema):
                    walk(path, b, depth + 1)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and prefix == "experiments":
            walk(f"{prefix}.<name>", extra, depth + 1)

    walk("", schema, 0)
    return rows


def config_reference(schema_path: str | Path) -> str:
    """The configuration reference as Markdown: one table row per key of the schema completed
    from the registries (:func:`aimlib.pipeline.checks.schema`)."""
    sch = schema(schema_path)
    lines = ["# Configuration reference", "",
             "Every key a config file may set, generated from `config/schema.yaml` as completed "
             "from the channel and algorithm registries (`aimlib.pipeline.checks.schema`). "
             "`experiments.<name>` is any experiment (a figure of the registry, or one of your "
             "own). The presets are described in `config/README.md`.", "",
             "| key | type | default | meaning |", "|---|---|---|---|"]
    for path, typ, default, desc in config_keys(sch):
        d = "" if default is None else f"`{default}`"
        lines.append(f"| `{path}` | {typ} | {d} | {desc.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def figure_gallery(images: dict[str, list[tuple[str, str]]]) -> str:
    """The figure gallery as Markdown from the figure registry: per figure, what it shows, the
    paper figure it reproduces, the corrections it carries, and the ``images`` given for it
    (``{fig: [(path, caption), ...]}``)."""
    lines = ["# Figures", "",
             "Every figure of the registry (`aimlib.figures.registry.FIGURES`), with the paper "
             "figure it reproduces and the corrections it carries. The images are the ones in "
             "the README (`figures/readme/`): the paper preset's SE figures, the paper's sizes "
             "with 2 seeds (`config/paper_lite.yaml`) or the quick preset, as each caption "
             "says.", ""]
    for name, spec in FIGURES.items():
        lines += [f"## {name}", "", f"**Paper:** {spec.paper}.", "", spec.shows, "",
                  f"**Corrections:** {spec.corrections}", ""]
        for path, caption in images.get(name, []):
            lines += [f"![{name}, {caption}]({path})", "", f"*{caption}*", ""]
    return "\n".join(lines)
