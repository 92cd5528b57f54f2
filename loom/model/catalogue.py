"""The cable catalogue a model's cabling sheets draw from: media, the lengths actually sold and
their part numbers.  A separate YAML file (`cabling.catalogue`), validated like a model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator

from .errors import ModelError, Problem
from .names import Label
from .schema import Speed, Strict


class Medium(Strict):
    kind: Label = Field(description="DAC, AOC or fiber")
    description: Label | Literal[""] = Field("", description="free text for the bill of materials")
    speeds: list[Speed] = Field(min_length=1, description="link speeds this medium carries")
    max_m: float = Field(gt=0, le=10_000, description="longest run this medium allows")
    lengths: dict[Annotated[float, Field(gt=0, le=10_000)], Label] = Field(min_length=1, max_length=256, description="sold length in metres → part number")
    transceiver: Label | None = Field(None, description="transceiver part (two per cable) for fibre runs")
    fiber: Label | None = Field(None, description="fibre type, e.g. OM4 MPO-12")

    @field_validator("lengths")
    @classmethod
    def _sorted(cls, v: dict[float, str]) -> dict[float, str]:
        return dict(sorted(v.items()))


class Catalogue(Strict):
    media: list[Medium] = Field(min_length=1, max_length=64, description="media, tried in order")


#: Catalogues shipped with loom (`loom/catalogue`, a link to `topology/catalogue` in a checkout).
BUNDLED = Path(__file__).resolve().parents[1] / "catalogue"


def catalogue_path(model_path: Path, relative: str) -> Path:
    """The catalogue a model names, only from under the model's directory; `catalogue/NAME`
    that the model's directory does not have is one of the catalogues shipped with loom."""
    base = Path(os.path.abspath(model_path)).parent
    path = Path(os.path.normpath(base / relative))  # lexical: `..` cannot climb out, links the user made may
    if not (path == base or base in path.parents):
        raise ValueError(f"{relative[:80]!r} is outside the model's directory")
    shipped = BUNDLED / path.relative_to(base / "catalogue") if (base / "catalogue") in path.parents else None
    return shipped if shipped is not None and not path.exists() and shipped.is_file() else path


def load_catalogue(model_path: Path, relative: str) -> Catalogue:
    """Load the catalogue named by a model (path relative to the model file, under the model's
    directory, or one shipped with loom); errors name the field, never quote the file's content."""
    from pydantic import ValidationError

    from .reading import load_yaml

    try:
        path = catalogue_path(model_path, relative)
    except ValueError as exc:
        raise ModelError(str(model_path), [Problem("cabling.catalogue", f"the cable catalogue {exc}",
                                                   "give a catalogue path under the model's directory, e.g. catalogue/nvidia-hdr.yaml")]) from None
    data = load_yaml(path, "cable catalogue")  # a ModelError here names the catalogue, its line and the fix
    try:
        return Catalogue.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(".".join(str(p) for p in e["loc"]) + f": {e['msg']}" for e in exc.errors()[:3])
        raise ModelError(str(path), [Problem("", f"not a valid cable catalogue: {where}",
                                             "see topology/catalogue/nvidia-hdr.yaml for the format")]) from None
