"""The bundled cookbook: diet tags that match the ingredients, strict filters, fuzzy names."""

from __future__ import annotations

import re

import pytest

from demo_tools import find_recipes, get_recipe
from demo_tools.recipes import (DIETS, RECIPES, diet_conflicts, ingredient_categories,
                                   match_recipe, parse_diets, suits)

MEAT_OR_FISH = re.compile(r"chicken|beef|pork|bacon|chorizo|salmon|tuna|prawn|shrimp|anchov|"
                          r"fish|lamb|turkey", re.IGNORECASE)


def names(answer: str) -> list[str]:
    """Recipe names listed in a find_recipes answer."""
    return re.findall(r"^- (.+?) \(\d+ min", answer, re.MULTILINE)


def recipe(name: str):
    return next(r for r in RECIPES if r.name == name)


def test_the_cookbook_is_a_reasonable_size_and_well_formed():
    assert 25 <= len(RECIPES) <= 40
    assert len({r.name.lower() for r in RECIPES}) == len(RECIPES)
    for r in RECIPES:
        assert r.ingredients and r.steps and r.minutes > 0 and r.serves > 0
        assert r.diets <= set(DIETS), r.name
        assert len(get_recipe(r.name)) < 1500, r.name   # fits an observation uncut
    for diet in DIETS:
        assert sum(diet in r.diets for r in RECIPES) >= 5, diet
    assert sum("vegetarian" not in r.diets for r in RECIPES) >= 5


def test_every_diet_tag_agrees_with_the_ingredients():
    """Hand-written tags and the ingredient check must agree both ways: a tag may not claim
    a diet an ingredient breaks, and a recipe with no conflicting ingredient is tagged."""
    for r in RECIPES:
        computed = {d for d in DIETS if not diet_conflicts(r, d)}
        assert set(r.diets) == computed, (r.name, sorted(r.diets), sorted(computed))
        if "vegan" in r.diets:
            assert "vegetarian" in r.diets and "dairy-free" in r.diets


@pytest.mark.parametrize("ingredient, categories", [
    ("chicken stock", {"meat", "gluten"}), ("coconut milk", set()),
    ("oat milk", {"gluten"}),  # oats are not safe for coeliacs unless certified
    ("milk", {"dairy"}), ("peanut butter", set()), ("butter", {"dairy"}),
    ("egg noodles", {"egg", "gluten"}), ("rice noodles", set()), ("soy sauce", {"gluten"}),
    ("tamari (gluten-free soy sauce)", set()), ("corn tortillas", set()),
    ("flour tortilla wraps", {"gluten"}), ("cornflour", set()), ("fish sauce", {"fish"}),
    ("green curry paste (contains shrimp)", {"fish"}), ("parmesan", {"dairy", "animal rennet"}),
    ("vegetarian hard cheese", {"dairy"}), ("mayonnaise", {"egg"}), ("honey", {"honey"}),
    ("anchovies", {"fish"}), ("gluten-free vegetable stock", set()),
])
def test_ingredient_categories(ingredient, categories):
    assert ingredient_categories(ingredient) == categories


def test_vegetarian_search_never_returns_meat_or_fish():
    answer = find_recipes("chickpeas", "vegetarian")
    found = names(answer)
    assert found and "Chickpea and spinach curry" in found
    # the cookbook has chickpea dishes with chorizo and chicken: they must not appear
    assert "Chickpea and chorizo stew" not in found and "Chicken and chickpea tagine" not in found
    assert "Chickpea and chorizo stew" in names(find_recipes("chickpeas"))   # without a diet
    for ingredients in ("", "chickpeas", "rice", "lemon", "garlic, onion", "pasta", "chicken",
                        "salmon", "prawns"):
        for max_minutes in (0, 20, 45):
            for r in names(find_recipes(ingredients, "vegetarian", max_minutes)):
                rec = recipe(r)
                assert "vegetarian" in rec.diets
                assert not any(MEAT_OR_FISH.search(i) for i in rec.ingredients), r
    assert find_recipes("chicken", "vegetarian").startswith("No vegetarian recipes use chicken.")


@pytest.mark.parametrize("diet", ["vegan", "gluten-free", "dairy-free", "vegetarian, gluten free",
                                  "Vegan diet", "plant-based", "coeliac", "no dairy"])
def test_every_diet_is_strict(diet):
    wanted = parse_diets(diet)
    listed = names(find_recipes("", diet)) + names(find_recipes("rice", diet)) \
        + names(find_recipes("chickpeas, garlic", diet))
    assert listed
    for name in listed:
        r = recipe(name)
        assert all(suits(r, d) and not diet_conflicts(r, d) for d in wanted), (diet, name)


def test_vegan_excludes_eggs_dairy_and_honey():
    vegan = set(names(find_recipes("", "vegan")))
    for name in ("Shakshuka", "Honey roasted carrots and parsnips", "Cheese omelette",
                 "Mushroom risotto"):
        assert name not in vegan
    assert find_recipes("eggs", "vegan").startswith("No vegan recipes use eggs.")
    # the empty-ingredients listing says how many there are in all
    vegan_count = sum("vegan" in r.diets for r in RECIPES)
    assert find_recipes("", "vegan").startswith(f"{vegan_count} vegan recipes:")


def test_unknown_diets_are_refused_not_ignored():
    answer = find_recipes("chickpeas", "keto")
    assert answer.startswith("I cannot filter by the diet 'keto'")
    assert "vegetarian, vegan, gluten-free, dairy-free" in answer and not names(answer)
    assert parse_diets("none") == [] and parse_diets("") == [] and parse_diets("any") == []
    assert parse_diets("vegetarian and gluten-free") == ["vegetarian", "gluten-free"]
    with pytest.raises(ValueError):
        parse_diets("vegetarian, halal")


def test_ingredients_rank_by_how_many_match_and_time_limits():
    answer = find_recipes("chickpeas, spinach", "vegetarian")
    assert names(answer)[0] == "Chickpea and spinach curry"
    assert "uses chickpeas, spinach" in answer.splitlines()[1]
    quick = names(find_recipes("", "", 15))
    assert quick and all(recipe(n).minutes <= 15 for n in quick)
    assert find_recipes("", "vegan", 1) == \
        "No vegan recipes ready in 1 minute or less in the cookbook."
    assert find_recipes("dragon fruit").startswith("No recipes use dragon fruit.")
    # plurals and singulars meet
    assert "Guacamole" in names(find_recipes("avocado"))
    assert "Margherita pizza" in names(find_recipes("pizza"))   # the name counts too
    many = find_recipes("garlic")
    assert "(and " in many and len(names(many)) == 6


@pytest.mark.parametrize("query, expected", [
    ("Red lentil dal", "Red lentil dal"), ("red LENTIL dal", "Red lentil dal"),
    ("lentil dal", "Red lentil dal"), ("risoto", "Mushroom risotto"),
    ("the recipe for shakshuka", "Shakshuka"), ("spagetti bolognese", "Spaghetti bolognese"),
    ("mac and cheese", "Macaroni cheese"), ("pizza", "Margherita pizza"),
    ("salmon", "Baked salmon with potatoes and green beans"),
])
def test_get_recipe_matches_names_loosely(query, expected):
    found, _ = match_recipe(query)
    assert found is not None and found.name == expected
    answer = get_recipe(query)
    assert answer.startswith(expected + " (serves ")
    assert "Ingredients: " in answer and "\nSteps:\n1. " in answer


def test_get_recipe_full_text_and_not_found():
    answer = get_recipe("Chickpea and chorizo stew")
    assert "gluten-free, dairy-free, contains meat or fish" in answer
    assert "chorizo; onion" in answer
    assert get_recipe("curry") == ("No recipe called 'curry' in the cookbook. Did you mean: "
                                   "Chickpea and spinach curry; Thai green curry with prawns?")
    assert get_recipe("lasagne") == ("No recipe called 'lasagne' in the cookbook. Use "
                                     "find_recipes to search by ingredient or diet.")
    assert get_recipe(" ").startswith("Which recipe?")
