"""Tools of the example page (examples/index.html): how to look after a house plant.

Served with `python serve.py --site examples --tools examples/plant_tools.py`.
"""

from py_agent import tool

PLANTS = {
    "monstera": (7, "bright, indirect light"),
    "cactus": (21, "full sun"),
    "fern": (3, "shade; keep the soil moist"),
    "orchid": (7, "bright, indirect light; water by soaking the roots"),
    "snake plant": (14, "any light, even low"),
}


@tool
def plant_care(plant: str) -> str:
    """How often to water a house plant and how much light it needs.

    Args:
        plant: the kind of plant, e.g. "fern" or "monstera".
    """
    found = PLANTS.get(plant.strip().lower())
    if found is None:
        return f"I don't know {plant!r}; I know {', '.join(PLANTS)}."
    days, light = found
    return f"Water a {plant.lower()} every {days} days; it likes {light}."
