"""An MLP with its parameters in a map of structs (examples/mlp_params_map.dg): its loss falls."""

import io
import re
from pathlib import Path

import dsl

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp_params_map.dg"


def test_mlp_with_map_of_structs_params_trains():
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    interp.run_file(EXAMPLE)
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out.getvalue())]
    assert len(losses) >= 6
    assert all(a > b for a, b in zip(losses, losses[1:])), f"the loss should fall steadily: {losses}"
    assert losses[-1] < 0.05
    params = interp.get("params")
    assert set(params) == {"hidden", "out"}
    assert params["hidden"].w.shape == (2, 16) and params["out"].b.shape == (2,)
