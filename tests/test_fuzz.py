"""CI fuzzing: a few hundred seeded mutations of every fixture and of recipe-built models, each run
through `bnfold optimize` and `bnfold inspect` in-process (see tests/fuzzing.py for the contract).
scripts/fuzz.py runs the same cases by the ten thousand."""

from __future__ import annotations

import collections
import time

import pytest

from conftest import DATA, FIXTURES, RECIPES, TEST_RECIPES, build_recipe
from fuzzing import fuzz, load_seed

CASES = 1000
SEED = 20240611
SEED_RECIPES = [
    "Foundation_While_000",
    "Foundation_InstanceNorm_000",
    "Quant_Conv_BN_Relu_000",
    "Quant_Fp16_Conv_BN_000",
    "Net_Conv_Add_Mul_000",
    "Net_FC_BN_000",
    "Net_TConv_BN_000",
    "Net_DwConv_BN_000",
    "Net_Preactivation_BN_000",
]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz-seeds")
    paths = [DATA / name for name in FIXTURES]
    paths += [build_recipe(name, tmp) for name in SEED_RECIPES if (RECIPES / f"{name}.toml").exists()]
    # what shipped models carry: CUSTOM options, sparsity, float16 behind DEQUANTIZE, subgraphs, signature, metadata
    paths += [build_recipe("Shipped_000", tmp, ext, directory=TEST_RECIPES) for ext in (".tflite", ".circle")]
    return [load_seed(p) for p in paths]


def test_seeds_cover_fixtures_and_recipes(seeds):
    names = {s.name for s in seeds}
    assert set(FIXTURES) <= names
    assert {
        "Foundation_While_000.tflite",
        "Quant_Conv_BN_Relu_000.tflite",
        "Shipped_000.tflite",
        "Shipped_000.circle",
    } <= names
    assert all(s.index_positions for s in seeds)


def test_mutated_models_never_crash_hang_or_leave_files(seeds, tmp_path):
    started = time.perf_counter()
    outcomes = collections.Counter()
    failures = []
    for i, name, label, outcome in fuzz(seeds, CASES, seed=SEED, workdir=tmp_path):
        outcomes[outcome.kind] += 1
        if outcome.failed:
            failures.append(f"case {i} ({name}, {label}): {outcome.kind}: {outcome.detail}")
    elapsed = time.perf_counter() - started
    assert failures == [], "\n".join(failures[:20])
    assert sum(outcomes.values()) == CASES
    # the mutations must actually reach both sides of the contract
    assert outcomes["rejected"] > CASES // 4 and outcomes["ok"] > CASES // 50, outcomes
    assert elapsed < 90, f"{CASES} cases took {elapsed:.0f} s"


# ONE's options of issue 46 on mutated models of their own recipes: the same contract
ONE_OPTION_PASSES = (
    "dynamic_batch_to_single_batch,fold_mul,fold_reshape,fold_shape,fold_squeeze,remove_duplicate_const,"
    "replace_sub_with_add,resolve_former_customop,substitute_expand_dims_to_reshape,remove_unnecessary_cast,"
    "decompose_softmax,remove_gather_guard,fuse_mul_to_fullyconnected_weights,fuse_add_to_fullyconnected_bias,"
    "expand_broadcast_const,exp_disable_sep_transposeconv_actfunc,fuse_bcq,shuffle_weight_to_16x1float32,"
    "unroll_unidirseqlstm"
)
ONE_OPTION_RECIPES = [
    "Net_DynamicBatch_Conv_000",
    "Net_Shape_Add_000",
    "Net_Reshape_Squeeze_Const_000",
    "Net_Duplicate_Weights_000",
    "Net_Add_FloorMod_Gather_000",
    "BroadcastTo_000",
    "ExpandDims_005",
    "Softmax_002",
    "Net_Add_FullyConnected_001",
    "Net_Mul_FullyConnected_002",
    "Net_Mul_BroadcastConst_000",
    "Net_Sub_Const_000",
    "Net_Unnecessary_Cast_000",
]
ONE_OPTION_CASES = 300


def test_mutated_models_under_one_options_never_crash_hang_or_leave_files(tmp_path):
    tmp = tmp_path / "seeds"
    tmp.mkdir()
    seeds = [load_seed(build_recipe(name, tmp)) for name in ONE_OPTION_RECIPES]
    seeds += [load_seed(DATA / "zoo" / f"tfkeras_{name}.tflite") for name in ("lstm_stacked", "dynamic_batch_conv")]
    outcomes = collections.Counter()
    failures = []
    options = ("--passes", ONE_OPTION_PASSES)
    for i, name, label, outcome in fuzz(seeds, ONE_OPTION_CASES, seed=SEED, workdir=tmp_path, optimize_options=options):
        outcomes[outcome.kind] += 1
        if outcome.failed:
            failures.append(f"case {i} ({name}, {label}): {outcome.kind}: {outcome.detail}")
    assert failures == [], "\n".join(failures[:20])
    assert outcomes["rejected"] > ONE_OPTION_CASES // 4 and outcomes["ok"] > ONE_OPTION_CASES // 50, outcomes


CLI_CASES = 500


def test_odd_paths_and_options_never_crash_hang_clobber_or_leave_files(tmp_path):
    """Command-line fuzzing (tests/fuzzing.py): hostile paths in every slot, valid and invalid
    option values, mutated recipes; models are only replaced when the command asked for it."""
    from bnfold.cli import run
    from fuzzing import fuzz_commands

    model = DATA / "bn_conv_valid.tflite"
    circle = tmp_path / "m.circle"
    h5 = tmp_path / "in.h5"
    assert run(["convert", str(model), str(circle)]) == 0
    assert run(["check", str(model), str(model), "--write-input", str(h5)]) == 0
    started = time.perf_counter()
    outcomes = collections.Counter()
    commands = collections.Counter()
    batches = 0
    failures = []
    for i, argv, outcome in fuzz_commands(
        model, circle, RECIPES / "Net_Conv_Add_Mul_000.toml", h5, CLI_CASES, seed=SEED, workdir=tmp_path
    ):
        outcomes[outcome.kind] += 1
        commands[argv[0]] += 1
        batches += argv[1] == "--out-dir"
        if outcome.failed:
            failures.append(f"case {i}: {outcome.kind}: {outcome.detail}")
    elapsed = time.perf_counter() - started
    assert failures == [], "\n".join(failures[:20])
    assert outcomes["ok"] > CLI_CASES // 10 and outcomes["rejected"] > CLI_CASES // 3, outcomes
    assert set(commands) == {"optimize", "convert", "inspect", "check", "h5diff", "recipe", "run"}, commands
    assert batches > 0
    assert elapsed < 60, f"{CLI_CASES} cases took {elapsed:.0f} s"


RECIPE_CASES = 2000


def test_mutated_recipes_build_or_fail_in_one_line(tmp_path):
    """Every recipe in recipes/, one to three values changed (a number to a word, a huge or
    negative number, a line dropped or repeated, ...): `recipe build` exits 0 with a model bnfold
    reads back, or 1/2 in one line; never 3."""
    from fuzzing import fuzz_recipes

    started = time.perf_counter()
    outcomes = collections.Counter()
    failures = []
    recipes = sorted(RECIPES.glob("*.toml")) + sorted(TEST_RECIPES.glob("*.toml"))
    for i, name, outcome in fuzz_recipes(recipes, RECIPE_CASES, seed=SEED, workdir=tmp_path):
        outcomes[outcome.kind] += 1
        if outcome.failed:
            failures.append(f"case {i} ({name}): {outcome.kind}: {outcome.detail}")
    elapsed = time.perf_counter() - started
    assert failures == [], "\n".join(failures[:20])
    assert outcomes["ok"] > RECIPE_CASES // 10 and outcomes["rejected"] > RECIPE_CASES // 3, outcomes
    assert elapsed < 60, f"{RECIPE_CASES} cases took {elapsed:.0f} s"


@pytest.mark.parametrize(
    "recipe, old, new",
    [
        # scripts/fuzz.py seed 1, file case 1521: a RESHAPE whose input claims no elements, flattened into
        # a FULLY_CONNECTED of 140 features; the transpose propagation permuted 0 weight columns (internal error)
        (
            "Net_Transpose_FC_Flatten_000",
            'name = "c_nchw", shape = [2, 4, 5, 7]',
            'name = "c_nchw", shape = [2, 4, 0, 7]',
        ),
    ],
)
def test_what_the_long_fuzz_run_found_is_one_line_or_a_model(recipe, old, new, tmp_path):
    from bnfold.io.atomic import save_model
    from bnfold.recipe.chef import build, load_recipe
    from fuzzing import run_cli

    text = (RECIPES / f"{recipe}.toml").read_text()
    assert old in text
    (tmp_path / "r.toml").write_text(text.replace(old, new, 1))
    model = build(load_recipe(tmp_path / "r.toml"))
    src, out = tmp_path / "m.tflite", tmp_path / "o.tflite"
    save_model(model, str(src), model.format)
    code, _, err = run_cli(["optimize", str(src), str(out), "-q"])
    assert code in (0, 1, 2) and len(err.strip().splitlines()) <= 1, (code, err)
