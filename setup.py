"""setuptools' packages for linklab (its metadata and dependencies: pyproject.toml).

The folders linklab reads at run time stay at the checkout's top level, where users and the
README expect them; a wheel carries each as package data under linklab/bundled/, which is all
an installed linklab can reach. linklab/bundled/__init__.py finds them either way.
"""

from setuptools import find_packages, setup

# Each folder, and the files of it a wheel carries (exercises: one directory per exercise).
BUNDLED = {
    "topologies": ["*.yaml"],
    "experiments": ["*.yaml"],
    "exercises": ["*.md", "*/*.yaml", "*/*.md", "*/frr/*.conf"],  # ospf_reroute: a router's own frr.conf
    "controllers": ["*.md"],  # its apps are .py files: modules of the package, carried as such
    "schemas": ["*.json"],
    "baselines": ["*.md", "*/*.json"],  # each experiment's stored quick run: `linklab compare`, ab's A/A spread
}

setup(
    packages=find_packages(include=["linklab", "linklab.*"]) + [f"linklab.bundled.{d}" for d in BUNDLED],
    package_dir={f"linklab.bundled.{d}": d for d in BUNDLED},
    package_data={f"linklab.bundled.{d}": globs for d, globs in BUNDLED.items()},
)
