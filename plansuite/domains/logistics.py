"""Logistics initial states, uniform over all states of a fixed map with n packages (n drawn uniformly).

The map is fixed by the config: ``cities`` cities ``c1..cK``, each with one airport ``apt<i>`` and
``places_per_city - 1`` other locations ``pos<i>-<j>`` (``pos<i>`` when there is one), its own
``trucks_per_city`` trucks ``tru<i>`` (``tru<i>-<j>`` when several), and ``airplanes`` airplanes
``apn1..`` flying between the airports. A truck never leaves its city and an airplane never leaves
the airports, so a state places each truck at a place of its city, each airplane at an airport and
each package independently at any place or in any vehicle; every such state is reachable from every
other, and drawing each position uniformly draws the state uniformly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from plansuite.pddl.model import Atom


@dataclass(frozen=True)
class LogisticsMap:
    """The static part: places by city, trucks by city, airplanes."""

    places: dict[str, list[str]]  # city -> its places, the airport first
    trucks: dict[str, list[str]]  # city -> its trucks
    airplanes: list[str]

    @property
    def airports(self) -> list[str]:
        return [places[0] for places in self.places.values()]

    def objects(self) -> dict[str, str]:
        """Name -> type of every object but the packages."""
        out = {}
        for city, places in self.places.items():
            out[city] = "city"
            out.update({places[0]: "airport", **{p: "location" for p in places[1:]}})
            out.update({t: "truck" for t in self.trucks[city]})
        return {**out, **{a: "airplane" for a in self.airplanes}}

    def static_atoms(self) -> set[Atom]:
        return {("in-city", p, city) for city, places in self.places.items() for p in places}


def _numbered(prefix: str, i: int, j: int, count: int) -> str:
    """``prefix<i>`` when a city has one of them, else ``prefix<i>-<j>``.

    >>> _numbered("tru", 2, 1, 1), _numbered("pos", 1, 2, 3)
    ('tru2', 'pos1-2')
    """
    return f"{prefix}{i}" if count == 1 else f"{prefix}{i}-{j}"


def build_map(cities: int, places_per_city: int, trucks_per_city: int, airplanes: int) -> LogisticsMap:
    """The map of a config.

    >>> m = build_map(cities=2, places_per_city=2, trucks_per_city=1, airplanes=1)
    >>> m.places, m.trucks, m.airplanes
    ({'c1': ['apt1', 'pos1'], 'c2': ['apt2', 'pos2']}, {'c1': ['tru1'], 'c2': ['tru2']}, ['apn1'])
    """
    others = places_per_city - 1
    names = [f"c{i}" for i in range(1, cities + 1)]
    places = {c: [f"apt{i}", *(_numbered("pos", i, j, others) for j in range(1, others + 1))]
              for i, c in enumerate(names, 1)}
    trucks = {c: [_numbered("tru", i, j, trucks_per_city) for j in range(1, trucks_per_city + 1)]
              for i, c in enumerate(names, 1)}
    return LogisticsMap(places, trucks, [f"apn{i}" for i in range(1, airplanes + 1)])


class LogisticsStates:
    """n uniform in [min_packages, max_packages], then a uniform state with packages ``obj1..objn``."""

    def __init__(self, min_packages: int = 1, max_packages: int = 4, cities: int = 2,
                 places_per_city: int = 2, trucks_per_city: int = 1, airplanes: int = 1):
        if not 1 <= min_packages <= max_packages:
            raise ValueError(f"need 1 <= min_packages <= max_packages, got {min_packages}, {max_packages}")
        if cities < 2 or places_per_city < 1 or trucks_per_city < 1 or airplanes < 1:
            raise ValueError("need cities >= 2, places_per_city >= 1, trucks_per_city >= 1 and airplanes >= 1")
        self.min_packages, self.max_packages = min_packages, max_packages
        self.map = build_map(cities, places_per_city, trucks_per_city, airplanes)

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        n = rng.randint(self.min_packages, self.max_packages)
        packages = [f"obj{i}" for i in range(1, n + 1)]
        m = self.map
        all_places = [p for places in m.places.values() for p in places]
        vehicles = [t for trucks in m.trucks.values() for t in trucks] + m.airplanes
        atoms = m.static_atoms()
        atoms.update(("at", t, rng.choice(m.places[city])) for city, trucks in m.trucks.items() for t in trucks)
        atoms.update(("at", a, rng.choice(m.airports)) for a in m.airplanes)
        for pkg in packages:
            where = rng.choice(all_places + vehicles)
            atoms.add(("in", pkg, where) if where in vehicles else ("at", pkg, where))
        return {**m.objects(), **{p: "package" for p in packages}}, frozenset(atoms)
