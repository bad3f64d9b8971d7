"""Everything else is in pyproject.toml. ``conf/`` stays at the repository's top level (the
Hydra apps read it there in a checkout) and is shipped in the wheel as ``plansuite/conf``
(:mod:`plansuite.config_dir`), which only a ``package_dir`` mapping can express. Each of its
folders is listed as a package so that setuptools ships its YAML files without warnings."""

from pathlib import Path

from setuptools import find_packages, setup

CONF = Path(__file__).resolve().parent / "conf"
conf_packages = ["plansuite.conf", *sorted(
    "plansuite.conf." + ".".join(folder.relative_to(CONF).parts)
    for folder in CONF.rglob("*") if folder.is_dir() and folder.name != "__pycache__")]

setup(
    packages=[*find_packages(include=["plansuite", "plansuite.*"]), *conf_packages],
    package_dir={"plansuite.conf": "conf"},
    # here, not in pyproject.toml: a [tool.setuptools.package-data] table replaces this argument
    package_data={"plansuite": ["domains/*.pddl"], **{package: ["*.yaml"] for package in conf_packages}},
)
