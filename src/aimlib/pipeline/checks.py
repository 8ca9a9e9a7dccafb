"""Configuration checks: the JSON schema completed from the channel and algorithm registries
(:func:`schema`, :func:`check_schema`: one line naming the key), the semantic checks a schema
cannot express (:func:`check`), and the defaults a config may omit (:func:`fill_defaults`).
"""

from __future__ import annotations

import difflib

from aimlib.algorithms import ALGORITHMS
from aimlib.channels import CHANNELS, check_T, make_channel
from aimlib.core import backend as backends
from aimlib.core.options import SE_TOL, json_schema, resolve, specs
from aimlib.core.validation import check_positive
from aimlib.model import ATTENTIONS
from aimlib.pipeline.grids import (
    ConfigError,
    Ts,
    alphas_for,
    as_list,
    cells,
    channel_grid,
    channels,
    fnum,
    per_channel,
    rhos,
    token_laws,
    variants,
)
from aimlib.pipeline.plan import RECOVERY_STAGE, stage_cells
from aimlib.pipeline.recovery import RecoveryOptions
from aimlib.prior import PRIORS
from aimlib.theory.cells import DEFAULT_CELL, check_cell
from aimlib.tokens import TOKEN_LAWS

__all__ = ["check", "check_schema", "schema_errors", "validate", "schema", "fill_defaults",
           "resolve_ref", "schema_properties"]


def _positive(v, key: str) -> None:
    """:func:`aimlib.core.validation.check_positive` with the error as a :class:`ConfigError`."""
    try:
        check_positive(v, key)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _check_T(Ts, chans, key: str) -> None:
    for i, T in enumerate(as_list(Ts)):
        if not isinstance(T, int) or isinstance(T, bool):
            raise ConfigError(f"{key}[{i}] must be an integer, got {T!r}")
        for c in chans:
            cls = CHANNELS[c]
            try:
                check_T(T, c, cls.T_MIN, cls.T_MAX)
            except ValueError as e:
                raise ConfigError(f"{key}[{i}]: {e}") from None


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _check_params(exp: dict, block: dict | None, chans: list[str], base: str) -> None:
    """Each channel parameter given applies to one of the channels, with valid values."""
    src = exp if block is None else block
    for cls in {CHANNELS[c] for c in CHANNELS}:
        key = cls.PARAM
        if key is None or key not in src:
            continue
        owners = [c for c in chans if CHANNELS[c].PARAM == key]
        if not owners:
            raise ConfigError(f"{base}.{key} applies to the "
                              f"{' and '.join(c for c, v in CHANNELS.items() if v.PARAM == key)} "
                              f"channel only, not to {', '.join(chans)}")
        for i, v in enumerate(as_list(src[key])):
            try:
                CHANNELS[owners[0]].check_param(v)
            except ValueError as e:
                raise ConfigError(f"{base}.{key}[{i}]: {e}") from None


def _check_d_rho(exp: dict, block: dict, stage: str, key: str) -> None:
    """``d_rho``: every key a width of the block, every d large enough, one seed count."""
    d_rho = block.get("d_rho")
    if not d_rho:
        return
    widths = {fnum(float(r)) for c in channels(exp, block) for r in rhos(exp, block, c)}
    if isinstance(block["seeds"], list) and len(block["seeds"]) > 1:
        raise ConfigError(f"{key}: needs a single seed count, got seeds={block['seeds']}")
    for r, d in d_rho.items():
        try:
            r = float(r)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: {r!r} is not a width rho") from None
        if fnum(r) not in widths:
            raise ConfigError(f"{key}: rho={r:g} is not a width of the block "
                              f"({', '.join(f'{x:g}' for x in sorted(widths))})")
        d = d["d"] if isinstance(d, dict) else d
        for T in sorted({T for c in channels(exp, block) for T in Ts(exp, block, c)}):
            try:
                ALGORITHMS[stage].check_d(int(d), int(T))
            except ValueError as e:
                raise ConfigError(f"{key}.{r:g}: {e}") from None


def validate(config: dict, schema_path) -> dict:
    """The workflow's check of a config: the schema (:func:`check_schema`), the defaults
    (:func:`fill_defaults`), then the semantic checks (:func:`check`) of every experiment the
    schema accepted; raise one :class:`ConfigError` with a line for every block that fails, in
    the config's order, so that a config with several mistakes is mended in one pass.  Returns
    ``config``, filled in."""
    failing = schema_errors(config, schema_path)
    if any(b[0] != "experiments" or len(b) < 2 for b in failing):
        # a top-level key is wrong: the experiments cannot be read reliably
        raise ConfigError("\n".join(failing.values()))
    failed = {b[1] for b in failing}
    # defaults for the accepted experiments only when some failed (the config is rejected then)
    fill_defaults({"experiments": {k: v for k, v in config["experiments"].items()
                                   if k not in failed}} if failed else config)
    if not config.get("experiments"):
        check(config)  # names the empty block
    lines = []
    for name, exp in config["experiments"].items():
        if name in failed:
            lines.append(failing[("experiments", name)])
            continue
        try:
            _check_experiment(exp, f"experiments.{name}")
        except ConfigError as e:
            lines.append(str(e))
    if lines:
        raise ConfigError("\n".join(lines))
    return config


def check(config: dict) -> None:
    """Semantic checks that the JSON schema cannot express; raise :class:`ConfigError` with
    one line per experiment that fails (each names its first impossible key)."""
    if not config.get("experiments"):
        raise ConfigError("experiments: empty; a config needs at least one experiment (see "
                          "config/quick.yaml)")
    errors = []
    for name, exp in config["experiments"].items():
        try:
            _check_experiment(exp, f"experiments.{name}")
        except ConfigError as e:
            errors.append(str(e))
    if errors:
        raise ConfigError("\n".join(errors))


def _check_experiment(exp: dict, base: str) -> None:
    """:func:`check` of one experiment block (``base``: ``experiments.<name>``)."""
    chans = channels(exp)
    for i, c in enumerate(chans):
        if c not in CHANNELS:
            raise ConfigError(f"{base}.channel[{i}] = {c!r}: not a channel (known: "
                              f"{', '.join(CHANNELS)})")
    _check_model_values(exp, None, chans, base)
    for stage in ("se", "small_width", *ALGORITHMS):
        if stage not in exp:
            continue
        block = exp[stage]
        for c in channels(exp, block):
            if c not in chans:
                raise ConfigError(f"{base}.{stage}.channel: {c!r} is not a channel of the "
                                  f"experiment ({', '.join(chans)})")
        _check_model_values(exp, stage, channels(exp, block), f"{base}.{stage}")
        if stage in ALGORITHMS:
            for c in channels(exp, block):
                try:
                    ALGORITHMS[stage].check_channel(c)
                except ValueError as e:
                    raise ConfigError(f"{base}.{stage}.channel: {e}; set {stage}.channel") \
                        from None
        for gk in ("alpha", "alpha_bar"):
            if gk in block:
                for c in channels(exp, block):
                    for x in channel_grid(block[gk], c, f"{base}.{stage}.{gk}"):
                        _positive(x, f"{base}.{stage}.{gk}")
        _check_params(exp, block, channels(exp, block), f"{base}.{stage}")
        if stage != "small_width":
            _check_points(exp, block, stage, base)
        if stage in ALGORITHMS and "backend" in block:
            try:
                backends.check(block["backend"], f"{base}.{stage}.backend", device=False)
            except ValueError as e:
                raise ConfigError(str(e)) from None
        if stage in ALGORITHMS and "alpha_bar_max" in block:
            _check_alpha_bar_max(exp, block, f"{base}.{stage}")
        if stage in ALGORITHMS:
            seeds, ds = block["seeds"], as_list(block["d"])
            for i, d in enumerate(ds):
                for T in sorted({T for c in channels(exp, block) for T in Ts(exp, block, c)}):
                    try:
                        ALGORITHMS[stage].check_d(int(d), int(T))
                    except ValueError as e:
                        raise ConfigError(f"{base}.{stage}.d[{i}]: {e}") from None
            _check_d_rho(exp, block, stage, f"{base}.{stage}.d_rho")
            if isinstance(seeds, list) and len(seeds) != len(ds):
                raise ConfigError(f"{base}.{stage}.seeds: a list of seeds needs one entry per "
                                  f"d ({len(ds)}), got {len(seeds)}")
    _check_params(exp, None, chans, base)
    if "recovery" in exp and RECOVERY_STAGE not in exp:
        raise ConfigError(f"{base}.recovery: measures the thresholds of the {RECOVERY_STAGE} "
                          f"stage, which the experiment does not have")
    for key in ("gap", "small_width"):
        if key in exp and any(cell != DEFAULT_CELL for cell in cells(exp)):
            what = "the finite-size study" if key == "gap" else "the small-width limit"
            raise ConfigError(f"{base}.{key}: {what} is the paper's tied self-attention's; "
                              "give it its own experiment")
    if "gap" in exp:
        for c, alphas in exp["gap"].items():
            if c not in chans:
                raise ConfigError(f"{base}.gap.{c}: not a channel of the experiment")
            amp_alphas = ({fnum(a) for a in channel_grid(exp["amp"]["alpha"], c,
                                                         f"{base}.amp.alpha")}
                          if "amp" in exp and "alpha" in exp["amp"] else set())
            for a in alphas:
                if fnum(a) not in amp_alphas:
                    raise ConfigError(f"{base}.gap.{c}: alpha={a} is not on the amp.alpha "
                                      "grid")


def _check_model_values(exp: dict, stage: str | None, chans: list[str], base: str) -> None:
    """``T``, ``rho`` and a data stage's swept options of an experiment (``stage`` None) or a
    stage: positive widths, each channel's valid ``T``, and a value given per channel for each
    channel and for no other (``base``: the block's key)."""
    block = None if stage is None else exp[stage]
    src = exp if block is None else block
    swept = ([k for k, (_, spec) in specs(ALGORITHMS[stage].OPTIONS).items() if spec.sweep]
             if stage in ALGORITHMS else [])
    for name in ("T", "rho", *swept):
        if name not in src:
            continue
        value = src[name]
        if per_channel(value):
            for c in value:
                if c not in chans:
                    raise ConfigError(f"{base}.{name}.{c}: not a channel of the "
                                      f"{'experiment' if block is None else 'stage'} "
                                      f"({', '.join(chans)})")
            missing = [c for c in chans if c not in value]
            if missing:
                raise ConfigError(f"{base}.{name}: no value for channel {missing[0]!r} (it "
                                  f"gives {', '.join(value)})")
        for c in chans:
            key = f"{base}.{name}.{c}" if per_channel(value) else f"{base}.{name}"
            own = value[c] if per_channel(value) else value
            if name == "T":
                _check_T(own, [c], key)
            elif name == "rho":
                for i, rho in enumerate(as_list(own)):
                    _positive(rho, f"{key}[{i}]")


def _check_alpha_bar_max(exp: dict, block: dict, key: str) -> None:
    """``alpha_bar_max`` is positive and leaves at least one point of the grid at every
    ``(channel, rho, T)`` of the stage (:func:`aimlib.pipeline.grids.alphas_for` names the key)."""
    _positive(block["alpha_bar_max"], f"{key}.alpha_bar_max")
    for c in channels(exp, block):
        for cell in cells(exp, block):
            for rho in rhos(exp, block, c):
                for T in Ts(exp, block, c):
                    alphas_for(block, float(rho), int(T), c, key, cell)


def _check_points(exp: dict, block: dict, stage: str, base: str) -> None:
    """Each channel of a stage is valid at each ``T`` and output function it runs, and covers
    each of its token laws (``base``: ``experiments.<name>``)."""
    where = f"{base}.{stage}" if "tokens" in block else base
    try:
        laws = token_laws(exp, block, f"{where}.tokens")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        cell_list = (stage_cells(exp, stage, f"{base}.{stage}") if stage in ALGORITHMS
                     else cells(exp, block))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    for cell in cell_list:
        for c in channels(exp, block):
            for T in Ts(exp, block, c):
                for law in laws:
                    try:
                        check_cell(*cell, int(T), c, law)
                    except ValueError as e:
                        key = str(e).split("=")[0]
                        at = f"{base}.{stage}" if key in block else base
                        at = where if key == "tokens" else at
                        raise ConfigError(f"{at}.{key} (in {cell[0]} {cell[1]}-attention): {e}") \
                            from None
    for c in channels(exp, block):
        for T in Ts(exp, block, c):
            for v in variants(exp, stage, c):
                if v == "mismatched":
                    bad = [law.tag for law in laws if not law.is_gaussian]
                    if bad:
                        raise ConfigError(f"{where}.tokens: the mismatched SE is for Gaussian "
                                          f"tokens only, got {bad[0]}")
                    continue
                try:
                    ch = make_channel(c, T=int(T), variant=v)
                except ValueError as e:  # e.g. the density variant beyond T = 2
                    key = "variant" if "variant" in block else "T"
                    raise ConfigError(f"{base}.{stage}.{key}: {e}") from None
                for law in laws:
                    try:
                        ch.check_tokens(law)
                    except ValueError as e:
                        raise ConfigError(f"{where}.{e}") from None
                    if stage in ALGORITHMS and law.corr and ALGORITHMS[stage].name == "gd" \
                            and not CHANNELS[c].SUPPORTS_CORRELATED:
                        raise ConfigError(f"{where}.tokens: correlated tokens are not "
                                          f"implemented for GD on the {c} channel")


# --------------------------------------------------------------------------------------------
# the schema, completed from the channel registry
# --------------------------------------------------------------------------------------------
def schema(schema_path) -> dict:
    """``config/schema.yaml`` with the registry filled in: the channel names (``$defs.channel``),
    one grid, axes and gap entry per channel, each channel's parameter as an experiment and
    stage key, the smallest ``T`` any channel takes, and the algorithms' option defaults."""
    import yaml  # yaml only when a file is read

    with open(schema_path) as f:
        sch = yaml.safe_load(f)
    defs = sch["$defs"]
    names = list(CHANNELS)
    defs["channel"]["oneOf"] = [{"enum": names}, {"type": "array", "minItems": 1,
                                                  "uniqueItems": True, "items": {"enum": names}}]
    for sub, ref in (("channel_grid", "#/$defs/grid"), ("axes", "#/$defs/axes")):
        target = defs[sub]["oneOf"][1] if sub == "channel_grid" else defs[sub]
        what = "grid" if sub == "channel_grid" else "panel's axes"
        for c in names:
            target["properties"].setdefault(c, {"$ref": ref,
                                                "description": f"the {c} channel's {what}"})
    for sub, ref in (("channel_T", "#/$defs/T"), ("channel_rho", "#/$defs/positive_list")):
        for c in names:
            defs[sub]["oneOf"][1]["properties"][c] = {
                "$ref": ref, "description": f"the {c} channel's {sub.split('_')[1]}"}
    defs["token_law"] = token_law_schema()
    for key, names_k in (("prior", list(PRIORS)), ("attention", list(ATTENTIONS))):
        defs[key]["oneOf"] = [{"enum": names_k}, {"type": "array", "minItems": 1,
                                                   "uniqueItems": True,
                                                   "items": {"enum": names_k}}]
    gap = defs["experiment"]["properties"]["gap"]
    for c in names:
        gap["properties"][c] = {"type": "array", "minItems": 1,
                                "items": {"$ref": "#/$defs/positive"},
                                "description": f"the {c} alphas of the finite-size gap"}
    # T has no schema minimum: each channel's own rule (check) names its smallest T
    for cls in CHANNELS.values():
        if cls.PARAM:
            entry = {"$ref": "#/$defs/number_list",
                     "description": f"{cls.name} channel parameter (checked by the channel)"}
            for block in ("experiment", "se_block", "data_block"):
                defs[block]["properties"].setdefault(cls.PARAM, entry)
    # one stage block per algorithm: the data keys, its variant (if it has one) and its options
    # with their defaults
    variant = {"oneOf": [{"enum": []}, {"type": "array", "minItems": 1, "items": {"enum": []}}],
               "description": "output function(s) the algorithm runs with (hardmax: exact, or "
                              "the published density)"}
    names_v = sorted({v for c in CHANNELS.values() for v in c.VARIANTS})
    variant["oneOf"][0]["enum"] = names_v
    variant["oneOf"][1]["items"]["enum"] = names_v
    for name, alg in ALGORITHMS.items():
        props = json_schema(alg.OPTIONS, names)  # a swept option may be given per channel
        if alg.HAS_VARIANTS:
            props["variant"] = variant
        defs[f"{name}_block"] = {"allOf": [{"$ref": "#/$defs/data_block"}],
                                 "unevaluatedProperties": False, "properties": props,
                                 "description": f"the {alg.label} stage"}
        defs["experiment"]["properties"][name] = {"$ref": f"#/$defs/{name}_block"}
    defs["experiment"]["properties"]["recovery"] = {
        "type": "object", "additionalProperties": False,
        "properties": json_schema(RecoveryOptions),
        "description": "measure GD's and AGD's perfect-recovery threshold of each group of the "
                       "gd stage (docs/theory.md §16.4): the smallest grid alpha from which "
                       "every larger one has its error below eps, per seed and step budget"}
    sch["properties"]["se"]["properties"]["tol"]["default"] = SE_TOL
    return sch


#: Where the completed schema is written for users to read (``aimlib schema``'s output).
SCHEMA_FILE = "workflow/schemas/config.schema.yaml"


def schema_text(schema_path) -> str:
    """The completed schema (:func:`schema`) as YAML, with a header saying where it comes from:
    the content of :data:`SCHEMA_FILE`."""
    import yaml  # yaml only when a file is read

    head = ("# The workflow's configuration schema: config/schema.yaml completed from the\n"
            "# channel, token-law and algorithm registries. Generated, do not edit; remake it:\n"
            f"#   aimlib schema > {SCHEMA_FILE}\n"
            "# (tests/test_options.py checks that it is current).\n")
    return head + yaml.safe_dump(schema(schema_path), sort_keys=False, width=100,
                                 allow_unicode=True)


def token_law_schema() -> dict:
    """The schema of one token law, from the registry (:data:`aimlib.tokens.TOKEN_LAWS`): a
    name for a law without a parameter, ``{law: name, <param>: value}`` for one with, its range
    from the law's declaration."""
    plain = [name for name, law in TOKEN_LAWS.items() if law.PARAM is None]
    forms = []
    for name, law in TOKEN_LAWS.items():
        if law.PARAM is None:
            continue
        param = json_schema(law)[law.PARAM]
        param.pop("default", None)
        forms.append({"type": "object", "additionalProperties": False,
                      "required": ["law", law.PARAM],
                      "properties": {"law": {"const": name, "description": law.DESCRIPTION},
                                     law.PARAM: param}})
    ranged = ", ".join(f"{{law: {f['properties']['law']['const']}, {p}: ..}} with {p} "
                       f"{specs(TOKEN_LAWS[f['properties']['law']['const']])[p][1].range_text()}"
                       for f in forms for p in f["required"][1:])
    return {"description": f"a token law (docs/theory.md §13): {', '.join(plain)} (the first is "
                           f"the paper's), or {ranged}",
            "oneOf": [{"enum": plain}, *forms]}


def fill_defaults(config: dict) -> dict:
    """Fill in, in place, the defaults a config may omit: ``se.tol`` and the AMP and GD options
    of every experiment (:mod:`aimlib.core.options`), so that the resolved config recorded with
    every result says what was run."""
    config.setdefault("se", {}).setdefault("tol", SE_TOL)
    for exp in config.get("experiments", {}).values():
        for stage, alg in ALGORITHMS.items():
            if stage in exp:
                for k, v in resolve(alg.OPTIONS, exp[stage]).items():
                    exp[stage].setdefault(k, v)
        if "recovery" in exp:
            for k, v in resolve(RecoveryOptions, exp["recovery"]).items():
                exp["recovery"].setdefault(k, v)
    return config


def _walk(err):
    """An error and every error of its ``context`` (the branches of a oneOf/anyOf)."""
    yield err
    for sub in err.context or ():
        yield from _walk(sub)


def resolve_ref(node: dict, root: dict) -> dict:
    """A schema node with its ``$ref`` followed (the referenced definition, merged under the
    node's own keys; a chain of references is followed, a loop stops)."""
    seen = set()
    while "$ref" in node and node["$ref"] not in seen:
        seen.add(node["$ref"])
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def schema_properties(node: dict, root: dict) -> dict:
    """The properties of an object node, those of its ``allOf`` parts included."""
    node = resolve_ref(node, root)
    out = {}
    for sub in node.get("allOf", []):
        out.update(schema_properties(sub, root))
    out.update(node.get("properties", {}))
    return out


def _allowed_keys(node: dict, root: dict) -> set[str] | None:
    """The property names a schema node accepts (:func:`schema_properties`); ``None`` if it,
    or a part it combines, accepts any name."""
    node = resolve_ref(node, root)
    parts = [node, *(resolve_ref(sub, root) for sub in node.get("allOf", []))]
    if any(p.get("additionalProperties") not in (None, False) for p in parts):
        return None
    return set(schema_properties(node, root))


def _unknown_key(err, root: dict) -> str | None:
    """For an "unexpected property" error, one line naming the unknown key(s) alone, each with
    the closest valid key; ``None`` for any other error (or if every key is a valid one)."""
    if err.validator not in ("additionalProperties", "unevaluatedProperties") or \
            not isinstance(err.instance, dict):
        return None
    allowed = _allowed_keys(err.schema, root)
    if allowed is None:
        return None
    unknown = [k for k in err.instance if k not in allowed]
    if not unknown:
        return None
    where = _key_path(err.absolute_path)
    parts = []
    for k in unknown:
        close = difflib.get_close_matches(str(k), sorted(allowed), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{where + '.' if err.absolute_path else ''}{k}: unknown key{hint}")
    return "; ".join(parts) + f". Valid keys here: {', '.join(sorted(allowed))}"


#: How a boolean given on Snakemake's command line (``--config key=value``, a string) reads.
_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True,
               "false": False, "no": False, "off": False, "0": False}


def check_schema(config: dict, schema_path) -> None:
    """Validate ``config`` against :func:`schema`; on failure raise :class:`ConfigError` with
    one line per block that fails (an experiment, or a top-level key): the key, its value and
    the rule it breaks (the most specific of jsonschema's errors, not a dump of the schema)."""
    failing = schema_errors(config, schema_path)
    if failing:
        raise ConfigError("\n".join(failing.values()))


def schema_errors(config: dict, schema_path) -> dict[tuple, str]:
    """The schema's verdict per block that fails, ``{("experiments", name) or (key,): line}``,
    in the config's order (empty: the config passes)."""
    import jsonschema  # jsonschema only when a config is validated

    # `--config pause_long_runs=false` arrives as the string 'false': read it as the flag
    flag = config.get("pause_long_runs")
    if isinstance(flag, str) and flag.strip().lower() in _BOOL_WORDS:
        config["pause_long_runs"] = _BOOL_WORDS[flag.strip().lower()]
    sch = schema(schema_path)
    blocks: dict[tuple, list] = {}
    for e in jsonschema.Draft202012Validator(sch).iter_errors(config):
        path = tuple(e.absolute_path)
        blocks.setdefault(path[:2] if path[:1] == ("experiments",) else path[:1], []).append(e)
    order = {("experiments", k): i for i, k in enumerate(config.get("experiments") or {})}
    return {b: _schema_message(blocks[b], sch)
            for b in sorted(blocks, key=lambda b: (order.get(b, -1), str(b)))}


def _schema_message(errors: list, sch: dict) -> str:
    """The one line that says what is wrong in one block: the key, its value and the rule it
    breaks."""
    from jsonschema.exceptions import best_match  # jsonschema only when a config is validated

    # An unknown key first, alone, with the closest valid key: a misspelt key also makes its
    # block fail other rules (a required key missing, so none of its keys counts as evaluated).
    for e in sorted(errors, key=lambda e: -len(e.absolute_path)):
        for sub in _walk(e):
            msg = _unknown_key(sub, sch)
            if msg:
                return msg
    # The deepest error names the offending key (a block's "unevaluated properties" error is
    # only the echo of a failure inside it).
    deepest = max(len(e.absolute_path) for e in errors)
    err = best_match(e for e in errors if len(e.absolute_path) == deepest)
    # For "oneOf"/"anyOf" the most relevant branch's own error names the offending element;
    # a branch of the wrong type says less than one of the right type.
    while err.context:
        typed = [e for e in err.context if e.validator != "type"] or list(err.context)
        err = best_match(typed)
    value = err.instance
    text = repr(value) if not isinstance(value, dict | list) or len(repr(value)) < 60 else \
        f"{type(value).__name__} of {len(value)}"
    return f"{_key_path(err.absolute_path)} = {text}: {err.message}"
