"""Recipe search over the bundled cookbook, with diets that are never bent.

A diet filter keeps a recipe only if its hand-written tag says so *and* none of its
ingredients conflicts with the diet (:func:`diet_conflicts`), so a vegetarian search
cannot return meat or fish even if a tag were wrong. An unknown diet is refused
rather than ignored.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from py_agent import tool
from py_agent.retrieval import tokenize
from .recipe_data import RECIPES as _RAW

DIETS = ("vegetarian", "vegan", "gluten-free", "dairy-free")

# What each diet forbids, by ingredient category.
_FORBIDDEN = {
    "vegetarian": ("meat", "fish", "animal rennet"),
    "vegan": ("meat", "fish", "animal rennet", "dairy", "egg", "honey"),
    "gluten-free": ("gluten",),
    "dairy-free": ("dairy",),
}

# category -> (pattern an ingredient matches, pattern that exempts the whole ingredient)
_CATEGORIES: dict[str, tuple[re.Pattern[str], re.Pattern[str] | None]] = {
    "meat": (re.compile(r"\b(chicken|beef|pork|bacon|ham|lamb|turkey|sausages?|chorizo|mince|"
                        r"steak|duck|pancetta|prosciutto|salami|lard|veal|venison)\b"), None),
    "fish": (re.compile(r"\b(fish|salmon|tuna|cod|haddock|prawns?|shrimps?|anchov(?:y|ies)|"
                        r"mussels|clams|crab|lobster|sardines?|mackerel|squid|oyster)\b"), None),
    "animal rennet": (re.compile(r"\b(parmesan|parmigiano|gelatine?|pecorino)\b"), None),
    "dairy": (re.compile(r"\b(milk|butter|cream|cheese|cheddar|mozzarella|parmesan|feta|"
                         r"halloumi|paneer|ricotta|yogh?urt|ghee|mascarpone|creme fraiche)\b"),
              re.compile(r"\b(coconut|oat|almond|soy|soya|rice|peanut|cashew) "
                         r"(milk|butter|cream|yogh?urt)\b")),
    "egg": (re.compile(r"\b(eggs?|mayonnaise|mayo|meringue)\b"), None),
    "honey": (re.compile(r"\bhoney\b"), None),
    "gluten": (re.compile(r"\b(flour|bread|breadcrumbs|croutons|pasta|spaghetti|macaroni|"
                          r"noodles|couscous|bulgur|barley|rye|soy sauce|tortillas?|wraps?|"
                          r"pitta|naan|oats?|stock|wheat|spelt|beer|semolina|pizza dough)\b"),
               re.compile(r"\b(gluten-free|rice noodles|corn tortillas|rice flour|"
                          r"chickpea flour|buckwheat)\b")),
}

_DIET_WORDS = {
    "vegetarian": "vegetarian", "veggie": "vegetarian", "no meat": "vegetarian",
    "meat-free": "vegetarian", "meatless": "vegetarian", "lacto-ovo": "vegetarian",
    "vegan": "vegan", "plant-based": "vegan", "plant based": "vegan",
    "gluten-free": "gluten-free", "no gluten": "gluten-free", "celiac": "gluten-free",
    "coeliac": "gluten-free", "gf": "gluten-free",
    "dairy-free": "dairy-free", "no dairy": "dairy-free", "lactose-free": "dairy-free",
    "lactose intolerant": "dairy-free", "non-dairy": "dairy-free", "df": "dairy-free",
}
_NO_DIET = {"", "none", "any", "no", "all", "anything", "no restrictions", "omnivore"}
MAX_RESULTS = 6


@dataclass(frozen=True)
class Recipe:
    name: str
    serves: int
    minutes: int
    diets: frozenset[str]
    ingredients: tuple[str, ...]
    steps: tuple[str, ...]

    def diet_label(self) -> str:
        """``"vegan, vegetarian, dairy-free"``; meat and fish dishes say so."""
        tags = [d for d in DIETS if d in self.diets]
        if "vegetarian" not in self.diets:
            tags.append("contains meat or fish")
        return ", ".join(tags)


RECIPES: tuple[Recipe, ...] = tuple(
    Recipe(name=r["name"], serves=r["serves"], minutes=r["minutes"], diets=frozenset(r["diets"]),
           ingredients=tuple(r["ingredients"]), steps=tuple(r["steps"])) for r in _RAW)


def ingredient_categories(ingredient: str) -> set[str]:
    """The diet-relevant categories an ingredient belongs to (meat, fish, dairy, ...)."""
    text = ingredient.lower()
    found = set()
    for category, (pattern, exempt) in _CATEGORIES.items():
        if pattern.search(text) and not (exempt and exempt.search(text)):
            found.add(category)
    return found


def diet_conflicts(recipe: Recipe, diet: str) -> list[str]:
    """Ingredients of ``recipe`` that ``diet`` forbids (empty: the recipe suits it)."""
    forbidden = set(_FORBIDDEN[diet])
    return [i for i in recipe.ingredients if ingredient_categories(i) & forbidden]


def suits(recipe: Recipe, diet: str) -> bool:
    """Strict: tagged for the diet and no conflicting ingredient."""
    return diet in recipe.diets and not diet_conflicts(recipe, diet)


def parse_diets(text: str) -> list[str]:
    """``"vegetarian, gluten free"`` -> ["vegetarian", "gluten-free"]; ValueError if unknown."""
    text = " ".join(text.lower().replace("_", "-").split())
    text = re.sub(r"\b(gluten|dairy|meat|lactose)[ -]?free\b", r"\1-free", text)
    if text in _NO_DIET:
        return []
    diets: list[str] = []
    for part in re.split(r"\s*(?:,|;|/|\+|&|\band\b)\s*", text):
        part = part.strip().removesuffix(" diet").strip()
        if part in _NO_DIET:
            continue
        diet = _DIET_WORDS.get(part)
        if diet is None:
            raise ValueError(part)
        if diet not in diets:
            diets.append(diet)
    return diets


def _ingredient_terms(text: str) -> list[tuple[str, list[str]]]:
    """``"chickpeas, spinach and feta"`` -> [("chickpeas", ["chickpea"]), ("spinach", ...)]."""
    parts = re.split(r"\s*(?:,|;|/|\+|&|\band\b|\bor\b|\bwith\b)\s*", text.lower())
    return [(" ".join(p.split()), terms) for p in parts if (terms := tokenize(p))]


def _uses(recipe: Recipe, terms: list[str]) -> bool:
    """Does some ingredient (or the name) of ``recipe`` contain every term?"""
    for text in (*recipe.ingredients, recipe.name):
        have = set(tokenize(text))
        if all(t in have for t in terms):
            return True
    return False


def _line(recipe: Recipe, matched: list[str] | None = None) -> str:
    text = f"- {recipe.name} ({recipe.minutes} min, serves {recipe.serves}; {recipe.diet_label()})"
    if matched:
        text += f": uses {', '.join(matched)}"
    return text


@tool(keywords=["cook", "cooking", "meal", "dinner", "lunch", "breakfast", "dish ideas",
                 "vegetarian", "vegan", "gluten-free", "dairy-free",
                "receta", "recette", "Rezept", "cocinar", "cuisiner", "kochen",
                 *sorted({i for r in RECIPES for i in r.ingredients})])
def find_recipes(ingredients: str = "", diet: str = "", max_minutes: int = 0) -> str:
    """Find recipes to cook from the offline cookbook by ingredients on hand, diet and time; always
    pass the user's diet (vegetarian, vegan, gluten-free, dairy-free) if they ever mentioned
    one.

    Args:
        ingredients: what to cook with, comma-separated, e.g. "chickpeas, spinach"; empty for any.
        diet: "vegetarian", "vegan", "gluten-free", "dairy-free" or several joined by commas.
        max_minutes: the most time the recipe may take in total; 0 for no limit.

    Examples:
        what can I make with eggs, tomatoes and cheese?
        any vegan ideas for lunch
        I need a dinner that's ready in 20 minutes
        meal ideas without gluten
        what should I cook tonight with the leftover rice
        a dessert without gluten
    """
    try:
        diets = parse_diets(diet)
    except ValueError as exc:
        return (f"I cannot filter by the diet {str(exc)!r}: the cookbook knows "
                f"{', '.join(DIETS)}. Pass one of these (or several, comma-separated).")
    wanted = _ingredient_terms(ingredients)
    candidates = [r for r in RECIPES if all(suits(r, d) for d in diets)]
    if max_minutes and max_minutes > 0:
        candidates = [r for r in candidates if r.minutes <= max_minutes]
    what = " ".join(filter(None, [", ".join(diets), "recipes"]))
    limit = (f" ready in {max_minutes} minute{'s' if max_minutes != 1 else ''} or less"
             if max_minutes and max_minutes > 0 else "")
    if not candidates:
        return f"No {what}{limit} in the cookbook."
    if not wanted:
        ranked = sorted(candidates, key=lambda r: (r.minutes, r.name))
        lines = [_line(r) for r in ranked[:MAX_RESULTS]]
        more = f"\n(and {len(ranked) - MAX_RESULTS} more)" if len(ranked) > MAX_RESULTS else ""
        return f"{len(ranked)} {what}{limit}:\n" + "\n".join(lines) + more
    labels = [label for label, _ in wanted]
    scored = []
    for recipe in candidates:
        matched = [label for label, terms in wanted if _uses(recipe, terms)]
        if matched:
            scored.append((len(matched), recipe, matched))
    if not scored:
        return (f"No {what}{limit} use {', '.join(labels)}. Try other ingredients, or "
                "leave ingredients empty to see every match.")
    scored.sort(key=lambda s: (-s[0], s[1].minutes, s[1].name))
    lines = [_line(recipe, matched) for _, recipe, matched in scored[:MAX_RESULTS]]
    more = f"\n(and {len(scored) - MAX_RESULTS} more)" if len(scored) > MAX_RESULTS else ""
    return (f"{len(scored)} {what}{limit} with {', '.join(labels)}:\n" + "\n".join(lines)
            + more + "\nAsk get_recipe for the ingredients and steps.")


_NOT_NAME = frozenset(tokenize("recipe recipes dish cook cooking make making for"))


def _name_score(query_terms: list[str], query: str, recipe: Recipe) -> float:
    """0..1: how well a (possibly misspelt, partial) name fits ``recipe``."""
    name_terms = tokenize(recipe.name)
    if query_terms:
        best = [max((difflib.SequenceMatcher(None, q, n).ratio() for n in name_terms),
                    default=0.0) for q in query_terms]
        words = sum(b for b in best if b >= 0.75) / len(best)
    else:
        words = 0.0
    return max(words, difflib.SequenceMatcher(None, query, recipe.name.lower()).ratio())


def match_recipe(name: str) -> tuple[Recipe | None, list[Recipe]]:
    """The recipe ``name`` most likely means, or (None, close candidates)."""
    query = " ".join(name.lower().split())
    if not query:
        return None, []
    by_name = {r.name.lower(): r for r in RECIPES}
    if query in by_name:
        return by_name[query], []
    contains = [r for r in RECIPES if query in r.name.lower()]
    if len(contains) == 1:
        return contains[0], []
    terms = [t for t in tokenize(query) if t not in _NOT_NAME]
    scored = sorted(((_name_score(terms, query, r), r) for r in RECIPES), key=lambda s: -s[0])
    (best_score, best), runner_up = scored[0], scored[1][0]
    if best_score >= 0.6 and best_score - runner_up >= 0.1:
        return best, []
    return None, [r for s, r in scored if s >= 0.6][:4]


@tool(keywords=["instructions", "method", "ingredients list", "how to cook",
                "receta", "recette", "Rezept", "make",
                 *(r.name for r in RECIPES)])
def get_recipe(name: str) -> str:
    """Get a recipe's ingredients and cooking steps by dish name (a curry, dal, risotto, pizza,
    pasta, tacos, salad, soup, pancakes...), e.g. one find_recipes suggested.

    Args:
        name: the recipe name, e.g. "red lentil dal"; spelling need not be exact.

    Examples:
        how do I cook the chickpea curry?
        give me the steps for the pancakes
        what goes into the tomato soup
        full instructions for that risotto please
        how do I make the lemon pasta
    """
    recipe, close = match_recipe(name)
    if recipe is None:
        if not name.strip():
            return "Which recipe? Give its name, e.g. 'Red lentil dal'."
        hint = (f" Did you mean: {'; '.join(r.name for r in close)}?" if close
                else " Use find_recipes to search by ingredient or diet.")
        return f"No recipe called {name.strip()!r} in the cookbook.{hint}"
    steps = "\n".join(f"{i}. {s}" for i, s in enumerate(recipe.steps, 1))
    return (f"{recipe.name} (serves {recipe.serves}, {recipe.minutes} min; {recipe.diet_label()})\n"
            f"Ingredients: {'; '.join(recipe.ingredients)}\nSteps:\n{steps}")
