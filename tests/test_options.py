"""Options declared once (aimlib.core.options): every algorithm's and token law's options carry
their meaning, type, default and range; the library's checks, the schema, the command line and
the static schema file are derived from them and agree with each other."""

import argparse
import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
import yaml

from aimlib import cli, model
from aimlib.algorithms import ALGORITHMS, amp, gd, spectral
from aimlib.channels import CHANNELS
from aimlib.core import options
from aimlib.core.backend import BACKENDS
from aimlib.pipeline import checks
from aimlib.pipeline import config as cfg
from aimlib.tokens import TOKEN_LAWS, make_tokens

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Demo:
    rate: float = options.option(0.5, "a rate", gt=0, le=1)
    count: int = options.option(3, "a count", ge=1)
    mode: str = options.option("a", "a mode", choices=("a", "b"))
    flag: bool = options.option(False, "a flag", cli=False)


@pytest.mark.parametrize("values,match", [
    ({"rate": 0}, r"^demo\.rate must be in \(0, 1\], got rate=0$"),
    ({"rate": 1.5}, r"rate must be in \(0, 1\]"),
    ({"rate": float("nan")}, "rate must be a finite number"),
    ({"rate": "0.5"}, "rate must be a finite number"),
    ({"count": 0}, "count must be >= 1, got count=0"),
    ({"count": 2.5}, "count must be an integer"),
    ({"count": True}, "count must be an integer"),
    ({"mode": "c"}, "mode must be one of 'a', 'b', got mode='c'"),
    ({"flag": 1}, "flag must be true or false"),
    ({"speed": 1}, r"speed: unknown option of Demo \(its options: rate, count, mode, flag\)"),
])
def test_validate_names_the_key_and_the_range(values, match):
    with pytest.raises(ValueError, match=match):
        options.validate(Demo, values, where="demo.")


def test_validate_accepts_the_edges_and_numpy_scalars():
    import numpy as np

    ok = {"rate": 1, "count": np.int64(1), "mode": "b", "flag": True}
    assert options.validate(Demo, ok) == ok
    assert options.validate(Demo, {"count": 2.0}) == {"count": 2.0}  # an integral float


def test_schema_and_cli_come_from_the_declaration():
    sch = options.json_schema(Demo)
    assert sch["rate"] == {"description": "a rate", "type": "number", "exclusiveMinimum": 0.0,
                           "maximum": 1.0, "default": 0.5}
    assert sch["count"] == {"description": "a count", "type": "integer", "minimum": 1,
                            "default": 3}
    assert sch["mode"]["enum"] == ["a", "b"] and sch["flag"]["type"] == "boolean"
    p = argparse.ArgumentParser()
    options.add_arguments(p, Demo)
    args = p.parse_args(["--rate", "0.25", "--mode", "b"])
    assert (args.rate, args.count, args.mode) == (0.25, 3, "b") and not hasattr(args, "flag")
    with pytest.raises(SystemExit):
        p.parse_args(["--mode", "c"])


def test_an_undeclared_field_is_an_error():
    @dataclass(frozen=True)
    class Loose:
        x: int = 1

    with pytest.raises(TypeError, match=r"Loose\.x is not declared"):
        options.specs(Loose)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_each_algorithm_option_is_declared_once_and_derived_everywhere(name):
    """Every field is declared with option(); the schema block equals json_schema (defaults
    included); the subcommand has a flag for every CLI option, with its default and choices."""
    alg = ALGORITHMS[name]
    sp = options.specs(alg.OPTIONS)
    block = cfg.schema(ROOT / "config" / "schema.yaml")["$defs"][f"{name}_block"]["properties"]
    assert {k: block[k] for k in sp} == options.json_schema(alg.OPTIONS, list(CHANNELS))
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {a.dest: a for a in sub.choices[name]._actions}
    for k, (default, spec) in sp.items():
        if not spec.cli:
            assert k not in flags
            continue
        assert flags[k].default == default and flags[k].help.startswith(spec.cli_help
                                                                         or spec.help)
        if spec.allowed() is not None:
            assert tuple(flags[k].choices) == spec.allowed()


def test_backend_choices_are_the_backend_registry():
    for name in ("amp", "gd"):
        assert options.specs(ALGORITHMS[name].OPTIONS)["backend"][1].allowed() == tuple(BACKENDS)


@pytest.mark.parametrize("call,match", [
    (lambda d: amp.run(d, damping=1.0), r"damping must be in \[0, 1\), got damping=1.0"),
    (lambda d: amp.run(d, max_iter=0), "max_iter must be >= 1"),
    (lambda d: amp.run(d, scale="fixed"), "scale must be one of 'prior', 'free'"),
    (lambda d: amp.run(d, backend="jax"), "backend must be one of 'numpy', "),
    (lambda d: spectral.run(d, dtype="float16"), "dtype must be one of 'float64', 'float32'"),
])
def test_the_library_checks_with_the_declaration(call, match):
    data = model.generate("hardmax", 0.5, 0.5, 2, 20, 0)
    with pytest.raises(ValueError, match=match):
        call(data)


def test_gd_checks_with_the_declaration():
    data = model.generate("softmax", 0.5, 0.5, 2, 20, 0)
    with pytest.raises(ValueError, match=r"holdout must be in \(0, 1\], got holdout=0"):
        gd.run(data, holdout=0)
    with pytest.raises(ValueError, match="lr must be > 0"):
        gd.run(data, lr=-1)


def test_cli_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["amp", "hardmax", "--rho", "0.5", "--alpha", "0.5", "--d", "30",
                  "--max-iter", "0"])
    assert exc.value.code == 2
    assert "aimlib amp: error: --max-iter must be >= 1, got max-iter=0" in capsys.readouterr().err


def test_token_law_schema_comes_from_the_registry():
    """Every law of the registry is in the schema with its parameter's declared range; a law
    the schema accepts is one make_tokens accepts and the converse at the range's edges."""
    sch = cfg.schema(ROOT / "config" / "schema.yaml")
    law = sch["$defs"]["token_law"]
    names = set(law["oneOf"][0]["enum"]) | {f["properties"]["law"]["const"]
                                              for f in law["oneOf"][1:]}
    assert names == set(TOKEN_LAWS)
    import jsonschema

    node = {"$defs": sch["$defs"], "$ref": "#/$defs/token_law"}
    for spec, ok in [({"law": "student_t", "nu": 4.5}, True), ({"law": "student_t", "nu": 4},
                                                               False),
                     ({"law": "correlated", "c": 0}, True), ({"law": "correlated", "c": 1},
                                                             False), ("rademacher", True)]:
        valid = jsonschema.Draft202012Validator(node).is_valid(spec)
        assert valid == ok, spec
        if ok:
            make_tokens(spec)
        else:
            with pytest.raises(ValueError):
                make_tokens(spec)


def test_static_schema_file_is_current():
    """workflow/schemas/config.schema.yaml is `aimlib schema`'s output (regenerate it with the
    command in its header if this fails) and validates every preset."""
    path = ROOT / checks.SCHEMA_FILE
    text = checks.schema_text(ROOT / "config" / "schema.yaml")
    assert path.read_text() == text, f"remake it: aimlib schema > {checks.SCHEMA_FILE}"
    out = subprocess.run([sys.executable, "-m", "aimlib", "schema"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert out == text
    import copy

    import jsonschema
    from snakemake.utils import update_config

    static = yaml.safe_load(text)
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for preset in (ROOT / "config").glob("*.yaml"):  # the GPU overlay over the paper preset
        if preset.name != "schema.yaml":
            conf = yaml.safe_load(preset.read_text())
            if preset.name == "gpu.yaml":
                merged = copy.deepcopy(base)
                update_config(merged, conf)
                conf = merged
            jsonschema.validate(conf, static)
    assert "enum: []" not in text


def test_no_option_class_is_left_in_core():
    """core knows no algorithm: its module declares the machinery and shared constants only."""
    assert not [k for k, v in vars(options).items() if isinstance(v, type)
                and any(f.name for f in getattr(v, "__dataclass_fields__", {}).values())
                and k != "Option"]
    assert {f.name for f in fields(options.Option)} >= {"help", "type", "choices"}
