"""The Model Explorer adapter extension: `model-explorer model.circle --extensions=bnfold.explorer`.

Model Explorer imports `<extension>.main` and registers every Adapter subclass it defines. This
one opens Circle and TFLite files through bnfold's reader (graphs.py): Circle, which Model
Explorer cannot open otherwise, and TFLite as bnfold sees it (its own adapter comes first for
.tflite; pick this one in the page's adapter menu, or give `adapterId=ADAPTER_ID` to
`model_explorer.config().add_model_from_path`).
"""

from __future__ import annotations

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from ..io.reader import read_model
from .graphs import model_graphs

ADAPTER_ID = "bnfold_flatbuffer"


class BnfoldAdapter(Adapter):
    metadata = AdapterMetadata(
        id=ADAPTER_ID,
        name="bnfold (Circle, TFLite)",
        description="Circle and TFLite models read by bnfold: subgraphs, signatures and custom "
        "operators as bnfold sees them.",
        fileExts=["circle", "tflite"],
    )

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        return {"graphs": model_graphs(read_model(model_path))}
